package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlcore"
)

// What several instances on one PostgreSQL store share beyond the Store
// interface (issue 17): who is alive, which instances run each request, a
// request's stop, the debit of its budget before each step, and the stack
// of a frame another instance runs. These calls are not batched by the
// writer: each is one statement (a function of the schema) in a
// transaction of its own, so that the rows two instances share (a
// request's, its ledger's) are locked for one statement only, always
// ledger first, and two instances never wait for each other in a cycle.

// Notifications: one channel, "reach", whose payloads say what changed.
const (
	notifyChannel  = "reach"
	notifyStop     = "stop:"     // a request was stopped: stop:<request>
	notifyApproval = "approval:" // an approval was written: approval:<id>
	notifyEnd      = "end:"      // a request's client ended it: end:<request>
	notifySession  = "session:"  // an MCP session's record was deleted (its DELETE): session:<hash>
	notifyIdle     = "idle:"     // an MCP session's record was swept, idle past the gap: idle:<hash>
	notifyUnhold   = "unhold:"   // a model turn let go of its hold on a request's ledger: unhold:<request>
)

// Life is one life of an instance (a process), as it heartbeats.
type Life struct {
	Owner   string // "<instance>/<life>", as it claims idempotency keys
	Name    string // the instance
	Started time.Time
	Seen    time.Time // the server's clock at its last heartbeat
	Alive   bool      // seen within the ttl asked for
}

// Heartbeat records that owner (a life of instance name, started then) is
// alive now, by the server's clock.
func (p *Store) Heartbeat(ctx context.Context, owner, name string, started time.Time) error {
	_, _, err := p.Beat(ctx, owner, name, started)
	return err
}

// Beat is Heartbeat, and says whether owner's life was given up by the
// others: its row was judged (Judge: another instance took it for dead
// and recovers its work), which the heartbeat then leaves as it is, or
// it was gone and the heartbeat inserted it (the others forgot it once
// they recovered its work, or this is its first heartbeat).
func (p *Store) Beat(ctx context.Context, owner, name string, started time.Time) (judged, inserted bool, err error) {
	if p.Closed() {
		return false, false, store.ErrClosed
	}
	err = p.beats.QueryRow(ctx, `INSERT INTO instances (owner, name, started, seen) VALUES ($1, $2, $3, reach_now())
	ON CONFLICT (owner) DO UPDATE SET seen = excluded.seen WHERE instances.seen >= 0 RETURNING (xmax = 0)`,
		owner, name, store.UnixNano(started)).Scan(&inserted)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("recording the heartbeat of %s: %w", owner, err)
	}
	return false, inserted, nil
}

// Judge takes those of owners whose last heartbeat is older than ttl for
// dead, for good, and returns them (with those judged already): their
// rows are marked (seen -1, older than any ttl), so that a heartbeat of
// theirs that comes after no longer makes them alive (Beat says judged).
// A life that heartbeated within ttl is left alive and not returned; the
// row's lock orders the two.
func (p *Store) Judge(ctx context.Context, owners []string, ttl time.Duration) ([]string, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	if len(owners) == 0 {
		return nil, nil
	}
	rows, err := p.pool.Query(ctx, `UPDATE instances SET seen = -1 WHERE owner = ANY($1) AND seen < reach_now() - $2 RETURNING owner`,
		owners, int64(ttl))
	if err != nil {
		return nil, fmt.Errorf("judging dead instances: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("judging dead instances: %w", err)
	}
	return out, nil
}

// Lives returns every life that heartbeated, and whether it did within
// ttl, by the server's clock.
func (p *Store) Lives(ctx context.Context, ttl time.Duration) ([]Life, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	rows, err := p.beats.Query(ctx, `SELECT owner, name, started, seen, seen >= reach_now() - $1 FROM instances ORDER BY owner`,
		int64(ttl))
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	defer rows.Close()
	var out []Life
	for rows.Next() {
		var l Life
		var started, seen int64
		if err := rows.Scan(&l.Owner, &l.Name, &started, &seen, &l.Alive); err != nil {
			return nil, fmt.Errorf("listing instances: %w", err)
		}
		l.Started, l.Seen = store.FromUnixNano(started), store.FromUnixNano(seen)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	return out, nil
}

// Depart forgets owner: a life that stops cleanly says so, and is not
// waited for as if it had died.
func (p *Store) Depart(ctx context.Context, owner string) error {
	if p.Closed() {
		return store.ErrClosed
	}
	// Its leaves (LeavePartAt) go with it, as in Forget: no join of it
	// comes after.
	if _, err := p.pool.Exec(ctx, `WITH l AS (DELETE FROM part_leaves WHERE owner = $1)
	DELETE FROM instances WHERE owner = $1`, owner); err != nil {
		return fmt.Errorf("forgetting %s: %w", owner, err)
	}
	return nil
}

// Forget forgets a dead life once its work was recovered: only if it
// still has not heartbeated within ttl.
func (p *Store) Forget(ctx context.Context, owner string, ttl time.Duration) error {
	if p.Closed() {
		return store.ErrClosed
	}
	if _, err := p.pool.Exec(ctx, `DELETE FROM instances WHERE owner = $1 AND seen < reach_now() - $2`, owner, int64(ttl)); err != nil {
		return fmt.Errorf("forgetting %s: %w", owner, err)
	}
	// Its leaves (LeavePartAt): no join of a forgotten life is taken.
	// And the holds of its model turns (HoldTurn), which counted for
	// nothing since its heartbeat aged past ttl.
	if _, err := p.pool.Exec(ctx, `WITH h AS (DELETE FROM holds WHERE owner = $1 AND NOT EXISTS (SELECT 1 FROM instances WHERE owner = $1))
	DELETE FROM part_leaves WHERE owner = $1 AND NOT EXISTS (SELECT 1 FROM instances WHERE owner = $1)`, owner); err != nil {
		return fmt.Errorf("forgetting %s: %w", owner, err)
	}
	return nil
}

// JoinOutcome says what JoinRequest did.
type JoinOutcome string

// The outcomes of JoinRequest.
const (
	JoinBegun  JoinOutcome = "begun"  // a new request (or one begun again after it ended)
	JoinJoined JoinOutcome = "joined" // another instance runs it: the returned request is as it began it
	JoinFinal  JoinOutcome = "final"  // stopped or interrupted: its id starts no new work
	// JoinEnded: its client ended it (SettleRequest) while a part of it
	// still runs on a live instance: nothing is written, and the request
	// starts no new work until it has ended on every instance.
	JoinEnded JoinOutcome = "ended"
	// JoinForeign: the id is a request of another principal or tenant;
	// nothing is written, and only who it belongs to is returned.
	JoinForeign JoinOutcome = "foreign"
	// JoinHandoffEnded: a hand-off's sub-request that ended, named as a
	// root or under another parent; nothing is written, and the returned
	// request has its Parent (schema 14).
	JoinHandoffEnded JoinOutcome = "handoff_ended"
	// JoinLeft: a join that reached the server after a leave of its
	// owner's part that came later (JoinRequestAfter): nothing written.
	JoinLeft JoinOutcome = "left"
)

// JoinRequest begins r (state running) for the instance life owner, or
// joins it when another live instance runs a request of that id: then it
// returns that request as stored (who it acts for, its trace, budget and
// start). A request of that id that ended is begun again, its ledger
// starting over; one that was stopped or interrupted is returned as
// stored, with JoinFinal, and nothing is written; so is one still running
// whose every instance is dead (an orphan, not yet recovered), shown
// interrupted, as its recovery leaves it; so is one its client
// ended (SettleRequest) while a part of it still runs, with JoinEnded. A
// request of that id of another principal or tenant, in any state, is JoinForeign: nothing
// is written, and only who it belongs to is returned. A hand-off's
// sub-request that ended is not begun again as a root (or under another
// parent): JoinHandoffEnded, nothing written. ttl is how recent a
// heartbeat makes an instance alive.
func (p *Store) JoinRequest(ctx context.Context, r *store.Request, owner string, ttl time.Duration) (*store.Request, JoinOutcome, error) {
	return p.JoinRequestAfter(ctx, r, owner, ttl, 0)
}

// JoinRequestAfter is JoinRequest for owner's join number seq (counted by
// its life from 1; 0: not counted): it is refused, JoinLeft and nothing
// written, if a leave of owner's part of the request (LeavePartAt) came
// first with a count at least seq. A join whose caller gave up, and whose
// statement reaches the server only after the leave of the part it might
// have written, writes nothing.
func (p *Store) JoinRequestAfter(ctx context.Context, r *store.Request, owner string, ttl time.Duration, seq int64) (*store.Request, JoinOutcome, error) {
	if p.Closed() {
		return nil, "", store.ErrClosed
	}
	var roles, attrs []byte
	if len(r.Roles) > 0 {
		roles, _ = json.Marshal(r.Roles)
	}
	if len(r.Attrs) > 0 {
		attrs, _ = json.Marshal(r.Attrs)
	}
	out := &store.Request{ID: r.ID, Parent: r.Parent}
	var outcome string
	var oroles, oattrs, budget, cause []byte
	var started int64
	q := `SELECT o_outcome, o_principal, o_tenant, o_roles, o_attrs, o_trace, o_scene, o_agent, o_state,
	o_budget, o_cause, o_started FROM reach_join($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	args := []any{r.ID, owner, int64(ttl), r.Parent, r.Principal, r.Tenant, dialect.Text(roles), dialect.Text(attrs), r.Trace, r.Scene, r.Agent,
		dialect.Text(r.Budget), store.UnixNano(r.Started)}
	if seq > 0 {
		q = `SELECT o_outcome, o_principal, o_tenant, o_roles, o_attrs, o_trace, o_scene, o_agent, o_state,
	o_budget, o_cause, o_started FROM reach_join_after($14, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
		args = append(args, seq)
	}
	err := p.pool.QueryRow(ctx, q, args...).
		Scan(&outcome, &out.Principal, &out.Tenant, &oroles, &oattrs, &out.Trace, &out.Scene, &out.Agent, &out.State, &budget,
			&cause, &started)
	if err != nil {
		return nil, "", fmt.Errorf("beginning request %s: %w", r.ID, err)
	}
	if len(oroles) > 0 && json.Unmarshal(oroles, &out.Roles) != nil {
		out.Unreadable = "its roles are not JSON"
	}
	if len(oattrs) > 0 && json.Unmarshal(oattrs, &out.Attrs) != nil {
		out.Unreadable = "its attributes are not JSON"
	}
	if out.Unreadable != "" {
		out.Roles, out.Attrs = nil, nil
	}
	out.Budget, out.Cause, out.Started = sqlcore.EmptyNil(budget), sqlcore.EmptyNil(cause), store.FromUnixNano(started)
	if JoinOutcome(outcome) == JoinHandoffEnded { // its parent's id comes as o_cause
		out.Parent, out.Cause = string(cause), nil
	}
	if JoinOutcome(outcome) == JoinJoined && r.Parent == "" {
		// A run another instance began: what its earlier runs spent, which
		// that instance counts on from (schema 29), so that this part does
		// too. A read of the row, on a join only (not on a begin).
		var carried []byte
		if err := p.pool.QueryRow(ctx, `SELECT carried FROM requests WHERE id = $1`, r.ID).Scan(&carried); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, "", fmt.Errorf("joining request %s: reading what its earlier runs spent: %w", r.ID, err)
		}
		out.Carried = sqlcore.EmptyNil(carried)
	}
	return out, JoinOutcome(outcome), nil
}

// LeaveRequest is the end of owner's part in request id: the last live
// instance to leave stores it ended (state "ended" or "stopped"; a stop
// stored before stays, and its cause), with usage, and LeaveRequest
// reports true.
func (p *Store) LeaveRequest(ctx context.Context, id, owner string, ttl time.Duration, state string, usage, cause []byte, ended time.Time) (bool, error) {
	return p.LeaveRequestHanding(ctx, id, owner, ttl, state, usage, cause, ended, 0)
}

// LeaveRequestHanding is LeaveRequest for a part that holds undos, the
// undos of its writes not run: a part that leaves while another live one
// runs on hands them over to the request's record (its handed count), in
// the same transaction, and so does the last one of a request stopped
// meanwhile. A later stop of the request, through any instance, then has
// them run: the last live part of a stopped request that holds handed
// undos does not end it but leaves it, an orphan with no part, which a
// recovery claims (ClaimOrphans) and ends stopped, its undos run (every
// part's, each once under its key). A request that ends with no stop
// lets them go. It reports true when it stored the request ended.
func (p *Store) LeaveRequestHanding(ctx context.Context, id, owner string, ttl time.Duration, state string, usage, cause []byte, ended time.Time, undos int) (bool, error) {
	l, err := p.LeaveRequestOutcome(ctx, id, owner, ttl, state, usage, cause, ended, undos)
	return l == LeaveEnded, err
}

// Leave is what a part's leave (LeaveRequestOutcome) did with its request.
type Leave int

const (
	// LeaveLeft: other parts stay, every one of a live instance (or a stopped
	// request with handed undos is left to a recovery).
	LeaveLeft Leave = iota
	// LeaveEnded: the last live part stored the request ended.
	LeaveEnded
	// LeaveDead: a part of an instance that died stays: a stopped
	// request is left to a recovery (ClaimOrphans), which runs the undos
	// of every part, that one's too, and ends it.
	LeaveDead
)

// LeaveRequestOutcome is LeaveRequestHanding, saying what the leave did: read in
// the transaction that holds the request's row, where the gateway asked a
// query of its own before (whether a dead instance holds a part, for a
// stopped part) and a part could die between the two.
func (p *Store) LeaveRequestOutcome(ctx context.Context, id, owner string, ttl time.Duration, state string, usage, cause []byte, ended time.Time, undos int) (Leave, error) {
	if p.Closed() {
		return LeaveLeft, store.ErrClosed
	}
	// What the writer holds queued (a call's recorded result, point 5 of
	// docs/STATE.md) is committed first: the end goes through the pool,
	// not the writer, and a kill right after it left the request ended
	// and its calls' results lost (a retry got result_lost, not its
	// result). A waited write that holds nothing commits the writes queued
	// before it.
	if err := p.W.Do(ctx, &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}}); err != nil {
		return LeaveLeft, fmt.Errorf("leaving request %s: %w", id, err)
	}
	var what string
	err := p.pool.QueryRow(ctx, `SELECT reach_leave_part($1, $2, $3, $4, $5, $6, $7, $8)`,
		id, owner, int64(ttl), state, dialect.Text(usage), dialect.Text(cause), store.UnixNano(ended), int32(min(undos, 1<<30))).Scan(&what)
	if err != nil {
		return LeaveLeft, fmt.Errorf("leaving request %s: %w", id, err)
	}
	switch what {
	case "ended":
		return LeaveEnded, nil
	case "dead":
		return LeaveDead, nil
	}
	return LeaveLeft, nil
}

// StopRequest stores request id stopped in mode (1 soft, 2 cancel, 3
// isolate) with cause, unless it is stopped in that mode or a stronger one
// already, and wakes the other instances (Watch): the stop is durable, and
// every Admit after it refuses the request's steps, before StopRequest
// returns. It reports whether it changed the stored stop.
func (p *Store) StopRequest(ctx context.Context, id string, mode int, cause []byte) (bool, error) {
	if p.Closed() {
		return false, store.ErrClosed
	}
	// As in LeaveRequest: what the writer holds queued (the results of the
	// request's calls) is committed first, so that a kill right after the
	// stop does not leave a write that stays done (it declares no undo)
	// with its result lost: a retry got result_lost, not its result
	// (TestKill22StopAfterResultsOnPostgres).
	if err := p.W.Do(ctx, &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}}); err != nil {
		return false, fmt.Errorf("stopping request %s: %w", id, err)
	}
	var changed bool
	if err := p.pool.QueryRow(ctx, `SELECT reach_stop($1, $2, $3, $4)`, id, mode, dialect.Text(cause), time.Now().UnixNano()).
		Scan(&changed); err != nil {
		return false, fmt.Errorf("stopping request %s: %w", id, err)
	}
	return changed, nil
}

// SettleRequest stores that request id's client ended it (its sagas are
// settled) and wakes every instance (Watch, Signal "end"), each of which
// ends its part: from then on no recovery undoes its calls, even if an
// instance that ran some dies before it ends its part (ClaimOrphans ends
// such a request instead). It reports false for an id the store does not
// know.
func (p *Store) SettleRequest(ctx context.Context, id string) (bool, error) {
	if p.Closed() {
		return false, store.ErrClosed
	}
	// As in LeaveRequest: what the writer holds queued (the request's
	// calls' recorded results) is committed first. The end goes through
	// the pool, and a kill right after it left the request ended by its
	// client (its recovery ends it, undoing nothing) and the results of
	// its calls lost: a retry got result_lost, not its result
	// (TestKill22EndSettledOnPostgres).
	if err := p.W.Do(ctx, &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}}); err != nil {
		return false, fmt.Errorf("ending request %s: %w", id, err)
	}
	var found bool
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE requests SET settled = started WHERE id = $1`, id)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		found = true
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, notifyEnd+id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("ending request %s: %w", id, err)
	}
	return found, nil
}

// Settled returns the requests owner has a part in (JoinRequest) whose
// client ended them (SettleRequest), sorted: the ends that an instance cut
// off from the notifications, or not yet listening, may have missed (Watch).
func (p *Store) Settled(ctx context.Context, owner string) ([]string, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	rows, err := p.pool.Query(ctx, `SELECT r.id FROM replicas x JOIN requests r ON r.id = x.request
	WHERE x.owner = $1 AND r.settled <> 0 AND r.settled = r.started ORDER BY r.id`, owner)
	if err != nil {
		return nil, fmt.Errorf("reading the requests ended by their clients: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("reading the requests ended by their clients: %w", err)
	}
	return ids, nil
}

// RunningOn returns, of the requests ids, those the store holds running
// (not stopped, not ended) with a part on an instance other than owner's
// life, each with the names of the instances that hold those parts,
// sorted: for the views of an instance whose own part of a request ended
// while another's runs on. A part of a life the instances have forgotten
// (recovered as dead: its row in instances deleted) is not named: that
// life runs nothing, though its part stays in replicas, for a later stop's
// recovery to undo its writes; it used to be named, so that a request
// another instance ran on showed "running on gw-1" for a life of gw-1
// killed and recovered long before. A life that died and is not recovered
// yet is still named. One query; nothing is written.
func (p *Store) RunningOn(ctx context.Context, ids []string, owner string) (map[string][]string, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	if len(ids) == 0 {
		return nil, nil
	}
	// Asked of more than 16, it reads every part of another instance of a
	// request running now (few beside the requests a view holds) and keeps
	// those of ids: of 10,000 ids, 4-10 ms a view against 82 ms with
	// ANY($1) (BenchmarkRunningOn, load average 11).
	q, arg := `SELECT x.request, array_agg(DISTINCT split_part(x.owner, '/', 1) ORDER BY split_part(x.owner, '/', 1))
	FROM replicas x JOIN requests r ON r.id = x.request
	WHERE x.owner <> $2 AND r.state = 'running' AND r.stop = 0 AND ($1::TEXT[] IS NULL OR x.request = ANY($1))
		AND EXISTS (SELECT 1 FROM instances i WHERE i.owner = x.owner)
	GROUP BY x.request`, any(ids)
	var want map[string]bool
	if len(ids) > 16 {
		arg, want = nil, make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
	}
	rows, err := p.pool.Query(ctx, q, arg, owner)
	if err != nil {
		return nil, fmt.Errorf("reading where requests run: %w", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var id string
		var names []string
		if err := rows.Scan(&id, &names); err != nil {
			return nil, fmt.Errorf("reading where requests run: %w", err)
		}
		if want == nil || want[id] {
			out[id] = names
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading where requests run: %w", err)
	}
	return out, nil
}

// StopRecord is a stored stop, as Stops returns it.
type StopRecord struct {
	Request string
	Mode    int
	State   string
	Cause   []byte
	Updated time.Time
}

// Stops returns the requests stopped (or interrupted) whose stop was
// written after since: what an instance that was cut off from the
// notifications may have missed.
func (p *Store) Stops(ctx context.Context, since time.Time) ([]StopRecord, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	rows, err := p.pool.Query(ctx, `SELECT id, stop, state, cause, updated FROM requests WHERE stop > 0 AND updated > $1 ORDER BY updated`,
		store.UnixNano(since))
	if err != nil {
		return nil, fmt.Errorf("reading stops: %w", err)
	}
	defer rows.Close()
	var out []StopRecord
	for rows.Next() {
		var s StopRecord
		var updated int64
		if err := rows.Scan(&s.Request, &s.Mode, &s.State, &s.Cause, &updated); err != nil {
			return nil, fmt.Errorf("reading stops: %w", err)
		}
		s.Cause, s.Updated = sqlcore.EmptyNil(s.Cause), store.FromUnixNano(updated)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading stops: %w", err)
	}
	return out, nil
}

// Admission is what Admit decided.
type Admission struct {
	OK bool
	// Stopped is the request of ids stopped or interrupted (its State and
	// Cause as stored), when that refused the step.
	Stopped string
	State   string
	Cause   []byte
	// Over is the index in ids of the request whose cap in dimension Dim
	// ("tool_calls", "turns", "tokens" or "cost") the step would pass,
	// when that refused it.
	Over int
	Dim  string
	// Spent is what ids[Over] has spent (ids[0] once admitted).
	Spent store.Spend
}

// Admit admits one step of the request ids[0], whose ancestors follow it
// in ids, with caps[i] the limits of ids[i] (zero: none): under the locks
// of their ledgers, it refuses the step if any of them is stopped (see
// StopRequest) or if debiting d would pass a cap of any; otherwise it
// debits d from each, durably. Two instances admitting steps of one
// request never pass its caps together.
func (p *Store) Admit(ctx context.Context, ids []string, d store.Spend, caps []store.Spend) (Admission, error) {
	if p.Closed() {
		return Admission{}, store.ErrClosed
	}
	if len(ids) == 0 || len(caps) != len(ids) {
		return Admission{}, errors.New("admitting a step: one cap per request is needed")
	}
	ct, cc, ck, cx := make([]int64, len(ids)), make([]int64, len(ids)), make([]int64, len(ids)), make([]int64, len(ids))
	for i, c := range caps {
		ct[i], cc[i], ck[i], cx[i] = c.Turns, c.ToolCalls, c.Tokens, c.CostNano
	}
	var a Admission
	var cause []byte
	err := p.pool.QueryRow(ctx, `SELECT o_ok, o_over, o_dim, o_turns, o_calls, o_tokens, o_cost, o_stopped, o_state, o_cause
	FROM reach_admit($1, $2, $3, $4, $5, $6, $7, $8, $9)`, ids, d.Turns, d.ToolCalls, d.Tokens, d.CostNano, ct, cc, ck, cx).
		Scan(&a.OK, &a.Over, &a.Dim, &a.Spent.Turns, &a.Spent.ToolCalls, &a.Spent.Tokens, &a.Spent.CostNano, &a.Stopped, &a.State, &cause)
	if err != nil {
		return Admission{}, fmt.Errorf("admitting a step of request %s: %w", ids[0], err)
	}
	if a.Over > 0 {
		a.Over-- // 1-based in SQL
	}
	a.Cause = sqlcore.EmptyNil(cause)
	return a, nil
}

// FindFrame returns the newest checkpoint of frame id (16 hex digits), in
// any request: with its Stack, what a call placed under it by another
// instance needs to see its ancestors. An error matching ErrNotFound says
// there is none.
func (p *Store) FindFrame(ctx context.Context, id string) (*store.Frame, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	fs, err := p.QueryFrames(ctx, `frame = $1`, id)
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("frame %s: %w", id, store.ErrNotFound)
	}
	return fs[len(fs)-1], nil
}

// OpenFramesOf returns the checkpoints still open that owners wrote:
// after they died, the calls that may have run.
func (p *Store) OpenFramesOf(ctx context.Context, owners []string) ([]*store.Frame, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	return p.QueryFrames(ctx, `owner = ANY($1) AND state NOT IN `+sqlcore.FinalStates, owners)
}

// ClaimOrphans claims up to n requests that run (or were stopped and have
// not ended) and whose every instance is dead: judged (Judge) or
// forgotten, not merely silent for ttl. The recovery that claims them
// settled the idempotency claims of the lives it judged just before; a
// life whose heartbeat aged past ttl since (its last view had it alive)
// still holds its claims, and an undo run now would wait out their lease
// (minutes) for a key the dead life holds. Its requests wait for the next
// recovery, which judges it first. They are claimed for owner to recover; those their client ended (SettleRequest) it
// stores ended instead, and does not return. Each is taken with SKIP LOCKED, its dead
// instances' part dropped, and owner made its only instance, so that no
// other instance claims it while owner's heartbeat lasts (a lease: if
// owner dies too, it is an orphan again). It returns their ids, roots
// first.
func (p *Store) ClaimOrphans(ctx context.Context, owner string, ttl time.Duration, n int) ([]string, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	var ids []string
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT r.id FROM requests r
	WHERE (r.state = 'running' OR r.state = 'stopped' AND r.ended = 0)
		AND (EXISTS (SELECT 1 FROM replicas x WHERE x.request = r.id) OR r.handed > 0)
		AND NOT EXISTS (SELECT 1 FROM replicas x JOIN instances i ON i.owner = x.owner
			WHERE x.request = r.id AND i.seen >= 0)
	ORDER BY (r.parent <> ''), r.started
	FOR UPDATE OF r SKIP LOCKED LIMIT $1`, n)
		if err != nil {
			return err
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM replicas WHERE request = ANY($1)`, ids); err != nil {
			return err
		}
		// Those their client ended end here: nothing of theirs is undone.
		// Not a stopped one: its stop undoes it all, the writes of the
		// dead instances too, whether its client ended it before or after.
		rows, err = tx.Query(ctx, `UPDATE requests SET state = 'ended',
	ended = $2, updated = $2 WHERE id = ANY($1) AND state = 'running' AND settled <> 0 AND settled = started RETURNING id`, ids, time.Now().UnixNano())
		if err != nil {
			return err
		}
		settled, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		ids = slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(settled, id) })
		if len(ids) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO replicas (request, owner) SELECT x, $2 FROM unnest($1::TEXT[]) AS x`, ids, owner)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claiming orphaned requests: %w", err)
	}
	return ids, nil
}

// Release drops owner's part in request id without ending it (a
// recovery that stored the request's final state itself).
func (p *Store) Release(ctx context.Context, id, owner string) error {
	if p.Closed() {
		return store.ErrClosed
	}
	// As in LeaveRequest: what the writer holds queued (the results of the
	// request's calls here) is committed first. A stopped request with a
	// part on a dead instance is released to a recovery, which ends it;
	// a kill right after the release, the result of a call with no undo
	// still queued, left that write done and its result lost (a retry got
	// result_lost, not its result) (TestKill22bReleasedOnPostgres).
	if err := p.W.Do(ctx, &sqlcore.Write{Run: func(sqlcore.Batch, *sqlcore.Write) {}}); err != nil {
		return fmt.Errorf("releasing request %s: %w", id, err)
	}
	if _, err := p.pool.Exec(ctx, `DELETE FROM replicas WHERE request = $1 AND owner = $2`, id, owner); err != nil {
		return fmt.Errorf("releasing request %s: %w", id, err)
	}
	return nil
}

// Mark is what Marks returns of a request: its stop (Mode, State and
// Cause as Stops returns them), and whether its client ended it
// (SettleRequest) as it runs now.
type Mark struct {
	Request string
	Mode    int
	State   string
	Cause   []byte
	Ended   bool
}

// Marks returns, of the requests ids, those stopped or interrupted, and
// those their client ended: what an instance reads now and then of the
// requests it runs, so that it sees their stops and ends in bounded time
// whatever became of the notifications (Watch). One indexed read (the
// primary key) of len(ids) rows at most.
func (p *Store) Marks(ctx context.Context, ids []string) ([]Mark, error) {
	if p.Closed() {
		return nil, store.ErrClosed
	}
	rows, err := p.pool.Query(ctx, `SELECT id, stop, state, cause, settled <> 0 AND settled = started FROM requests
	WHERE id = ANY($1) AND (stop > 0 OR state IN ('stopped', 'interrupted') OR settled <> 0 AND settled = started)`, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the stops and ends of running requests: %w", err)
	}
	defer rows.Close()
	var out []Mark
	for rows.Next() {
		var m Mark
		if err := rows.Scan(&m.Request, &m.Mode, &m.State, &m.Cause, &m.Ended); err != nil {
			return nil, fmt.Errorf("reading the stops and ends of running requests: %w", err)
		}
		m.Cause = sqlcore.EmptyNil(m.Cause)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the stops and ends of running requests: %w", err)
	}
	return out, nil
}

// Signal is a wake-up from another instance (or this one): Kind "stop"
// (ID a request that was stopped), "end" (ID a request its client ended,
// SettleRequest), "approval" (ID an approval that was written), "session"
// (ID the hash of an MCP session whose record DeleteSession deleted),
// "idle" (one SweepSessions deleted) or "unhold" (ID a request on whose
// ledger a model turn let go of its hold, Unhold).
type Signal struct {
	Kind string
	ID   string
}

// ListenerName is the application_name of the connection that listens
// (Watch), unless the store's URL names one: pg_stat_activity tells it
// apart from the pool's.
const ListenerName = "reach listener"

// listener is the store's LISTEN connection.
type listener struct {
	started bool
}

// Watch listens for the signals of every instance on the store, on a
// connection of its own, until the store is closed: onSignal is called
// for each, in order, from one goroutine; onConnect each time the
// connection is made (again), after it listens, so that the caller reads
// what it may have missed while it was cut off, or before it first
// listened (Stops, Settled). A lost connection is made again, with a
// backoff up to 2s, and so is one that died silently: quiet for
// ConnectTimeout, it is pinged, and one that does not answer within
// ConnectTimeout more is dropped, as is one whose LISTEN is not answered
// within ConnectTimeout. Watch may be called once.
func (p *Store) Watch(onSignal func(Signal), onConnect func(ctx context.Context)) error {
	if p.Closed() {
		return store.ErrClosed
	}
	if p.lis.started {
		return errors.New("store: Watch is called once")
	}
	p.lis.started = true
	ctx, cancel := context.WithCancel(context.Background())
	p.bg.Add(2)
	go func() {
		defer p.bg.Done()
		<-p.stop
		cancel()
	}()
	go func() {
		defer p.bg.Done()
		wait := 50 * time.Millisecond
		for ctx.Err() == nil {
			err := p.listen(ctx, onSignal, onConnect, func() { wait = 50 * time.Millisecond })
			if ctx.Err() != nil {
				return
			}
			p.log.Warn("store: listening for the other instances' signals failed; connecting again", "err", err, "in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
		}
	}()
	return nil
}

func (p *Store) listen(ctx context.Context, onSignal func(Signal), onConnect func(context.Context), connected func()) error {
	cfg := p.cfg.ConnConfig.Copy()
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = ListenerName // told apart in pg_stat_activity
	}
	cctx, cancel := context.WithTimeout(ctx, p.o.ConnectTimeout)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		// Bounded: the connection may be dead.
		cctx, cancel := context.WithTimeout(context.Background(), p.o.ConnectTimeout)
		conn.Close(cctx)
		cancel()
	}()
	// Bounded as the connect is: a connection that dies without a word
	// between its connect and its LISTEN was waited on for ever, and
	// nothing was heard again (TestListenCutBeforeListening).
	lctx, cancel := context.WithTimeout(ctx, p.o.ConnectTimeout)
	_, err = conn.Exec(lctx, `LISTEN `+notifyChannel)
	cancel()
	if err != nil {
		return err
	}
	connected()
	if onConnect != nil {
		onConnect(ctx)
	}
	for {
		// A connection that died silently (a network path cut, a
		// firewall's idle timeout) would be waited on for ever: after
		// ConnectTimeout without a notification it is pinged, and one that
		// does not answer within ConnectTimeout is made again (and what it
		// missed read, onConnect). A wait that times out leaves the
		// connection usable (pgx closes it on any other error).
		wctx, cancel := context.WithTimeout(ctx, p.o.ConnectTimeout)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) && !conn.IsClosed() {
			pctx, cancel := context.WithTimeout(ctx, p.o.ConnectTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("the listening connection did not answer a ping: %w", err)
			}
			continue
		}
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(n.Payload, notifyStop):
			onSignal(Signal{Kind: "stop", ID: strings.TrimPrefix(n.Payload, notifyStop)})
		case strings.HasPrefix(n.Payload, notifyEnd):
			onSignal(Signal{Kind: "end", ID: strings.TrimPrefix(n.Payload, notifyEnd)})
		case strings.HasPrefix(n.Payload, notifyApproval):
			onSignal(Signal{Kind: "approval", ID: strings.TrimPrefix(n.Payload, notifyApproval)})
		case strings.HasPrefix(n.Payload, notifySession):
			onSignal(Signal{Kind: "session", ID: strings.TrimPrefix(n.Payload, notifySession)})
		case strings.HasPrefix(n.Payload, notifyIdle):
			onSignal(Signal{Kind: "idle", ID: strings.TrimPrefix(n.Payload, notifyIdle)})
		case strings.HasPrefix(n.Payload, notifyUnhold):
			onSignal(Signal{Kind: "unhold", ID: strings.TrimPrefix(n.Payload, notifyUnhold)})
		}
	}
}

// ErrInstanceRunning is returned by HoldInstance when another process
// holds the instance's name.
var ErrInstanceRunning = errors.New("another process runs this instance")

// HoldInstance holds the name of this instance among those on the store,
// for as long as the store is open: a lock of the server, on a connection
// of its own, that the server drops when the process dies (its connection
// closes). A second process that asks for a name held fails with
// ErrInstanceRunning (after asking for as long as ConnectTimeout, the
// time a killed holder's connection takes to end), so two running
// instances never share a name. A lost
// connection is made again, and the lock taken again; if another process
// took the name meanwhile, NameLost is closed. A connection lost without a
// word (a network cut) may still be open on the server, its session
// holding the lock: that session, told by its backend's pid, is this
// process's own, and is ended (pg_terminate_backend) so that the lock is
// taken again, not taken for another process's
// (TestHoldInstanceAfterSilentCut).
func (p *Store) HoldInstance(ctx context.Context, name string) error {
	if p.Closed() {
		return store.ErrClosed
	}
	conn, err := p.lockName(ctx, name, p.o.ConnectTimeout, 0)
	if err != nil {
		return err
	}
	p.nameLost = make(chan struct{})
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		var gone uint32 // the backend pid of the lock's connection lost, until the lock is taken again
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			if conn != nil {
				pctx, cancel := context.WithTimeout(context.Background(), p.o.ConnectTimeout)
				err := conn.Ping(pctx)
				cancel()
				if err == nil {
					continue
				}
				gone = conn.PgConn().PID()
				cctx, cancel := context.WithTimeout(context.Background(), p.o.ConnectTimeout)
				conn.Close(cctx) // bounded: the connection may be dead
				cancel()
				conn = nil
			}
			lctx, cancel := context.WithTimeout(context.Background(), p.o.ConnectTimeout)
			conn, err = p.lockName(lctx, name, 0, gone)
			cancel()
			if err == nil {
				gone = 0
			}
			if errors.Is(err, ErrInstanceRunning) {
				// Another process took the name while the lock was not
				// held: this one must stop (NameLost), or two would run
				// under one name.
				p.log.Error("store: another process holds this instance's name now; this one stops", "instance", name)
				close(p.nameLost)
				return
			}
			if err != nil {
				p.log.Error("store: holding the instance's name again failed", "instance", name, "err", err)
			}
		}
	}()
	return nil
}

// NameLost is closed when the name HoldInstance holds is lost: its lock's
// connection dropped, and another process took the name before this one
// could take it again. The process must then stop admitting work and shut
// down. It is nil (never ready) before HoldInstance.
func (p *Store) NameLost() <-chan struct{} { return p.nameLost }

// lockName takes the instance's lock on a connection of its own, asking
// again for up to wait while another holds it. A process killed a moment
// ago still holds it until the server has seen its connection close and
// ended its backend, which on a loaded machine takes a while: a restart
// right after a crash waits that out instead of being refused. gone, when
// not 0, is the backend pid of this process's own lock connection that
// was lost: while that session still holds the lock (the server has not
// seen the connection end), it is ended and the lock asked for again
// until ctx ends, never reported as another's (ErrInstanceRunning).
func (p *Store) lockName(ctx context.Context, name string, wait time.Duration, gone uint32) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, p.cfg.ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("holding instance %s: %w", name, err)
	}
	deadline := time.Now().Add(wait)
	for {
		var ok, own bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('reach instance ' || $1, 0))`, name).Scan(&ok); err != nil {
			conn.Close(context.Background())
			return nil, fmt.Errorf("holding instance %s: %w", name, err)
		}
		if ok {
			return conn, nil
		}
		if gone != 0 {
			// Held by this process's own lost session? Then end it: its
			// lock goes as its backend exits.
			// (CASE: the pid is ended only once its lock is seen. own is
			// false once the pid is gone: its locks went before it.)
			err := conn.QueryRow(ctx, `SELECT CASE WHEN EXISTS (
					SELECT 1 FROM pg_locks l, (SELECT hashtextextended('reach instance ' || $1, 0) AS k) h
					WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid = $2
					AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
					AND l.classid::text::bigint = (h.k >> 32) & 4294967295
					AND l.objid::text::bigint = h.k & 4294967295)
				THEN pg_terminate_backend($2) ELSE false END`, name, int64(gone)).Scan(&own)
			if err != nil {
				conn.Close(context.Background())
				return nil, fmt.Errorf("holding instance %s: ending its lost session: %w", name, err)
			}
			if !own {
				// Not (or no more) held by the lost session: asked again
				// at once, the lock is taken, or another holds it.
				gone = 0
				continue
			}
		}
		if !own && !time.Now().Before(deadline) {
			conn.Close(context.Background())
			return nil, fmt.Errorf("instance %s: %w", name, ErrInstanceRunning)
		}
		select {
		case <-ctx.Done():
			conn.Close(context.Background())
			return nil, fmt.Errorf("holding instance %s: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LeavePart ends owner's part in request id if it holds one, as
// LeaveRequest does (the request is stored "ended" when no live part is
// left), and reports whether it held one. It takes the request's ledger
// lock first, as reach_join does: a join of owner still committing is
// waited for, and then left. For a join whose caller gave up (its bound
// fired) as its commit landed: the part it may have written is not left
// held until the life ends.
func (p *Store) LeavePart(ctx context.Context, id, owner string, ttl time.Duration) (bool, error) {
	return p.LeavePartAt(ctx, id, owner, ttl, 0)
}

// LeavePartAt is LeavePart that records, with the leave, seq: how many
// joins owner's life had begun then (0: none recorded), so that a join of
// those reaching the server later is refused (JoinRequestAfter).
func (p *Store) LeavePartAt(ctx context.Context, id, owner string, ttl time.Duration, seq int64) (bool, error) {
	if p.Closed() {
		return false, store.ErrClosed
	}
	held := false
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT reach_lock_ledgers(ARRAY[$1]::TEXT[])`, id); err != nil {
			return err
		}
		if seq > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO part_leaves (request, owner, seq) VALUES ($1, $2, $3)
				ON CONFLICT (request, owner) DO UPDATE SET seq = greatest(part_leaves.seq, excluded.seq)`, id, owner, seq); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM replicas WHERE request = $1 AND owner = $2)`, id, owner).Scan(&held); err != nil {
			return err
		}
		if held {
			_, err := tx.Exec(ctx, `SELECT reach_leave($1, $2, $3, 'ended', NULL, NULL, $4)`, id, owner, int64(ttl), time.Now().UnixNano())
			return err
		}
		// The ledger row the lock made for a request no join wrote.
		_, err := tx.Exec(ctx, `DELETE FROM ledger WHERE request = $1 AND NOT EXISTS (SELECT 1 FROM requests WHERE id = $1)`, id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("leaving request %s: %w", id, err)
	}
	return held, nil
}
