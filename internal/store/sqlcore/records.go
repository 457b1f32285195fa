package sqlcore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/entities"
	"github.com/agentreach/reach/internal/store"
)

// Debit implements store.Ledger: one conditional update, in the writer's
// batch. A debit that passes a cap by itself is not tried.
func (c *Core) Debit(ctx context.Context, request string, d, limit store.Spend) (store.Spend, bool, error) {
	if c.Closed() {
		return store.Spend{}, false, store.ErrClosed
	}
	var spent store.Spend
	var ok bool
	args := []any{request, d.Turns, d.ToolCalls, d.Tokens, d.CostNano, limit.Turns, limit.ToolCalls, limit.Tokens, limit.CostNano}
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		spent, ok = store.Spend{}, false
		read := func(rows Rows) error {
			if !rows.Next() {
				return nil
			}
			return rows.Scan(&ok, &spent.Turns, &spent.ToolCalls, &spent.Tokens, &spent.CostNano)
		}
		if !d.Within(limit) {
			b.Query(w, StLedgerGet, []any{request}, read)
			return
		}
		b.Query(w, StLedgerDebit, args, func(rows Rows) error {
			if rows.Next() {
				return rows.Scan(&ok, &spent.Turns, &spent.ToolCalls, &spent.Tokens, &spent.CostNano)
			}
			b.Query(w, StLedgerGet, []any{request}, read) // refused: read what it has spent
			return nil
		})
	}})
	if err != nil {
		return store.Spend{}, false, fmt.Errorf("debiting the budget of request %s: %w", request, err)
	}
	return spent, ok, nil
}

// DebitAll debits d, uncapped, from the ledger of each request of ids, in
// one write of the writer's batch: all of them or none, so that a debit
// the store refused can be made again without counting twice on some.
func (c *Core) DebitAll(ctx context.Context, ids []string, d store.Spend) error {
	if c.Closed() {
		return store.ErrClosed
	}
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		for _, id := range ids {
			b.Query(w, StLedgerDebit, []any{id, d.Turns, d.ToolCalls, d.Tokens, d.CostNano, int64(0), int64(0), int64(0), int64(0)},
				func(rows Rows) error { return nil })
		}
	}})
	if err != nil {
		return fmt.Errorf("debiting the budgets of requests %v: %w", ids, err)
	}
	return nil
}

// NoteRefused implements store.Refusals: one upsert, in the writer's
// batch, on the path of a refused call only.
func (c *Core) NoteRefused(ctx context.Context, request string, reset bool) (int64, error) {
	if c.Closed() {
		return 0, store.ErrClosed
	}
	r := int64(0)
	if reset {
		r = 1
	}
	var n int64
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Query(w, StLedgerRefused, []any{request, r}, func(rows Rows) error {
			if !rows.Next() {
				return errors.New("no count returned")
			}
			return rows.Scan(&n)
		})
	}})
	if err != nil {
		return 0, fmt.Errorf("counting a refusal of request %s: %w", request, err)
	}
	return n, nil
}

// ResetRefused implements store.Refusals: one update in the writer's
// batch, which writes nothing when the count is zero already.
func (c *Core) ResetRefused(ctx context.Context, request string) error {
	if c.Closed() {
		return store.ErrClosed
	}
	if err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) { b.Exec(w, StLedgerRefusedReset, []any{request}, nil) }}); err != nil {
		return fmt.Errorf("setting back the refusals of request %s: %w", request, err)
	}
	return nil
}

// Spent implements store.Ledger.
func (c *Core) Spent(ctx context.Context, request string) (store.Spend, error) {
	if c.Closed() {
		return store.Spend{}, store.ErrClosed
	}
	sp, err := queryOne(ctx, c.R, func(sc interface{ Scan(...any) error }) (store.Spend, error) {
		var sp store.Spend
		err := sc.Scan(&sp.Turns, &sp.ToolCalls, &sp.Tokens, &sp.CostNano)
		return sp, err
	}, `SELECT turns, tool_calls, tokens, cost FROM ledger WHERE request = $1`, request)
	if errors.Is(err, ErrNoRows) {
		return store.Spend{}, nil
	}
	if err != nil {
		return store.Spend{}, fmt.Errorf("reading the budget spent by request %s: %w", request, err)
	}
	return sp, nil
}

// PutApproval implements store.Approvals.
func (c *Core) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	if c.Closed() {
		return store.ErrClosed
	}
	now := time.Now()
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		check := func(rows Rows) error {
			if rows.Next() {
				return nil
			}
			if a.Version == 0 {
				return fmt.Errorf("approval %s exists already: %w", a.ID, store.ErrConflict)
			}
			return fmt.Errorf("approval %s changed since version %d: %w", a.ID, a.Version, store.ErrConflict)
		}
		if a.Version == 0 {
			b.Query(w, StApprovalInsert, []any{a.ID, a.Key, a.Alt, a.Status, store.UnixNano(a.Created), store.UnixNano(a.Expires),
				now.UnixNano(), c.D.Doc(a.Data)}, check)
			return
		}
		b.Query(w, StApprovalUpdate, []any{a.Key, a.Alt, a.Status, store.UnixNano(a.Created), store.UnixNano(a.Expires), now.UnixNano(),
			c.D.Doc(a.Data), a.ID, a.Version}, check)
	}})
	if err != nil {
		return fmt.Errorf("storing approval %s: %w", a.ID, err)
	}
	a.Version++
	a.Updated = store.Round(now)
	return nil
}

func scanApproval(sc interface{ Scan(...any) error }) (*store.ApprovalRecord, error) {
	var a store.ApprovalRecord
	var created, expires, updated int64
	if err := sc.Scan(&a.ID, &a.Key, &a.Alt, &a.Status, &a.Version, &created, &expires, &updated, &a.Data); err != nil {
		return nil, err
	}
	a.Created, a.Expires, a.Updated = store.FromUnixNano(created), store.FromUnixNano(expires), store.FromUnixNano(updated)
	return &a, nil
}

// GetApproval implements store.Approvals.
func (c *Core) GetApproval(ctx context.Context, id string) (*store.ApprovalRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return getOne(ctx, c, "approval "+id, scanApproval, `SELECT `+approvalColumns+` FROM approvals WHERE id = $1`, id)
}

// ListApprovals implements store.Approvals.
func (c *Core) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]*store.ApprovalRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	q, args := c.D.ApprovalsQuery(f)
	return queryAll(ctx, c.R, "listing approvals", scanApproval, q, args...)
}

// ApprovalsQuery is the query of ListApprovals(f) and its arguments.
func (d Dialect) ApprovalsQuery(f store.ApprovalFilter) (string, []any) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT ` + approvalColumns + ` FROM approvals WHERE true`
	var args []any
	if f.Live {
		q += ` AND status IN ('pending', 'approved')`
	}
	if len(f.Keys) > 0 {
		args = append(args, d.List(f.Keys))
		q += ` AND (` + d.AnyOf("key", "$1") + ` OR ` + d.AnyOf("alt", "$1") + `)`
	}
	if f.Unaudited {
		// The marked rows only, through the index that holds them
		// (approvals_unaudited, whose predicate is this condition, word
		// for word: the engines use a partial index only for a query
		// that states its condition).
		q += ` AND ` + store.UnauditedCondition
	}
	args = append(args, limit)
	return q + ` ORDER BY created DESC, id DESC LIMIT $` + strconv.Itoa(len(args)), args
}

// BumpEntities implements store.Entities.
func (c *Core) BumpEntities(ctx context.Context, names []string) (uint64, error) {
	if c.Closed() {
		return 0, store.ErrClosed
	}
	var v int64
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		args := []any{c.D.List(names)}
		b.Query(w, StEntityBump, args, func(rows Rows) error {
			if !rows.Next() {
				return nil
			}
			if err := rows.Scan(&v); err != nil {
				return err
			}
			if len(names) > 0 {
				b.Exec(w, StEntitySet, append(args, v), nil) // skipped where the bump wrote them
			}
			return nil
		})
	}})
	if err != nil {
		return 0, fmt.Errorf("writing entity versions: %w", err)
	}
	return uint64(v), nil
}

// ClaimEntities implements store.Entities: one statement where the engine
// has StEntityClaim (a function of the schema), else the counter's bump and
// then a statement an entity, in the writer's batch.
func (c *Core) ClaimEntities(ctx context.Context, claims []entities.Claim) (uint64, []string, error) {
	if c.Closed() {
		return 0, nil, store.ErrClosed
	}
	var v int64
	var stale []string
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		stale = stale[:0] // a batch sent again runs the write again
		if b.Has(StEntityClaim) {
			names, froms, checks := make([]string, len(claims)), make([]int64, len(claims)), make([]bool, len(claims))
			for i, cl := range claims {
				names[i], froms[i], checks[i] = cl.Name, int64(cl.From), cl.Check
			}
			b.Query(w, StEntityClaim, []any{names, froms, checks}, func(rows Rows) error {
				if !rows.Next() {
					return errors.New("no version came back")
				}
				return rows.Scan(&v, &stale)
			})
			return
		}
		b.Query(w, StEntityBump, []any{c.D.List(nil)}, func(rows Rows) error {
			if !rows.Next() {
				return errors.New("no version came back")
			}
			if err := rows.Scan(&v); err != nil {
				return err
			}
			var set []string
			for _, cl := range claims {
				switch {
				case !cl.Check:
					set = append(set, cl.Name)
				case cl.From == 0:
					b.Exec(w, StEntityCreate, []any{v, cl.Name}, func(n int64) error { return staleIf(n, cl.Name, &stale) })
				default:
					b.Exec(w, StEntityCAS, []any{v, cl.Name, int64(cl.From)}, func(n int64) error { return staleIf(n, cl.Name, &stale) })
				}
			}
			if len(set) > 0 {
				b.Exec(w, StEntitySet, []any{c.D.List(set), v}, nil)
			}
			return nil
		})
	}})
	if err != nil {
		return 0, nil, fmt.Errorf("claiming entity versions: %w", err)
	}
	return uint64(v), stale, nil
}

// staleIf adds name to stale when its claim changed no row.
func staleIf(n int64, name string, stale *[]string) error {
	if n == 0 {
		*stale = append(*stale, name)
	}
	return nil
}

// EntityVersions implements store.Entities.
func (c *Core) EntityVersions(ctx context.Context, names []string) (map[string]uint64, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	out := map[string]uint64{}
	if len(names) == 0 {
		return out, nil
	}
	type version struct {
		name string
		v    int64
	}
	vs, err := queryAll(ctx, c.R, "reading entity versions", func(sc interface{ Scan(...any) error }) (version, error) {
		var e version
		err := sc.Scan(&e.name, &e.v)
		return e, err
	}, `SELECT name, version FROM entities WHERE `+c.D.AnyOf("name", "$1"), c.D.List(names))
	for _, e := range vs {
		out[e.name] = uint64(e.v)
	}
	return out, err
}

// PutPin implements store.Pins: the pin, and the pins' version moved on,
// in one transaction.
func (c *Core) PutPin(ctx context.Context, tool string, data []byte) (int64, error) {
	if c.Closed() {
		return 0, store.ErrClosed
	}
	now := time.Now()
	var v int64
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StPinPut, []any{tool, c.D.Doc(data), now.UnixNano()}, nil)
		b.Query(w, StPinsVersion, nil, func(rows Rows) error {
			if !rows.Next() {
				return nil
			}
			return rows.Scan(&v)
		})
	}})
	if err != nil {
		return 0, fmt.Errorf("storing the pin of %s: %w", tool, err)
	}
	return v, nil
}

// PutPins implements store.Pins: the pins, and the pins' version moved
// on once, in one transaction.
func (c *Core) PutPins(ctx context.Context, data map[string][]byte) (int64, error) {
	if c.Closed() {
		return 0, store.ErrClosed
	}
	now := time.Now().UnixNano()
	tools := slices.Sorted(maps.Keys(data))
	var v int64
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		v = 0
		for _, tool := range tools {
			if data[tool] == nil {
				b.Exec(w, StPinDelete, []any{tool}, nil)
				continue
			}
			b.Exec(w, StPinPut, []any{tool, c.D.Doc(data[tool]), now}, nil)
		}
		b.Query(w, StPinsVersion, nil, func(rows Rows) error {
			if !rows.Next() {
				return nil
			}
			return rows.Scan(&v)
		})
	}})
	if err != nil {
		return 0, fmt.Errorf("storing %d pins: %w", len(tools), err)
	}
	return v, nil
}

// ListPins implements store.Pins: the pins and their version, in one
// statement (one snapshot).
func (c *Core) ListPins(ctx context.Context) (map[string][]byte, int64, error) {
	if c.Closed() {
		return nil, 0, store.ErrClosed
	}
	type pin struct {
		tool string
		data []byte
		v    int64
	}
	pins, err := queryAll(ctx, c.R, "reading pins", func(sc interface{ Scan(...any) error }) (pin, error) {
		var p pin
		err := sc.Scan(&p.tool, &p.data, &p.v)
		return p, err
	}, `SELECT '', CAST(NULL AS TEXT), value FROM store_meta WHERE key = 'pins_version' UNION ALL SELECT tool, data, 0 FROM pins`)
	if err != nil {
		return nil, 0, err
	}
	out := map[string][]byte{}
	var version int64
	for _, p := range pins {
		if p.data == nil {
			version = p.v
			continue
		}
		out[p.tool] = p.data
	}
	return out, version, nil
}

// PinsVersion implements store.Pins.
func (c *Core) PinsVersion(ctx context.Context) (int64, error) {
	if c.Closed() {
		return 0, store.ErrClosed
	}
	v, err := queryOne(ctx, c.R, scanInt, `SELECT value FROM store_meta WHERE key = 'pins_version'`)
	if err != nil {
		return 0, fmt.Errorf("reading the pins' version: %w", err)
	}
	return v, nil
}

func scanInt(sc interface{ Scan(...any) error }) (int64, error) {
	var v int64
	err := sc.Scan(&v)
	return v, err
}

// AddDeadLetter implements store.DeadLetters: durable when it returns.
func (c *Core) AddDeadLetter(ctx context.Context, d *store.DeadLetter) (int64, error) {
	if c.Closed() {
		return 0, store.ErrClosed
	}
	now := time.Now()
	var id int64
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Query(w, StDeadAdd, []any{d.Request, d.Frame, d.Tool, c.D.Text(d.Args), d.Error, d.Attempts, store.DeadOpen, d.Note,
			now.UnixNano(), now.UnixNano(), d.Principal, d.Tenant}, func(rows Rows) error {
			if !rows.Next() {
				return errors.New("no id was returned")
			}
			return rows.Scan(&id)
		})
	}})
	if err != nil {
		return 0, fmt.Errorf("storing a dead letter: %w", err)
	}
	d.ID, d.State, d.Created, d.Updated = id, store.DeadOpen, store.Round(now), store.Round(now)
	return id, nil
}

func scanDead(sc interface{ Scan(...any) error }) (*store.DeadLetter, error) {
	var d store.DeadLetter
	var created, updated, taken int64
	var taker string
	if err := sc.Scan(&d.ID, &d.Request, &d.Frame, &d.Tool, &d.Args, &d.Error, &d.Attempts, &d.State, &d.Note,
		&created, &updated, &taker, &taken, &d.Principal, &d.Tenant); err != nil {
		return nil, err
	}
	d.Args, d.Created, d.Updated = EmptyNil(d.Args), store.FromUnixNano(created), store.FromUnixNano(updated)
	d.Taker = takerOf(taker, taken, updated)
	return &d, nil
}

// takerOf is a stored dead letter's Taker: the taker its take recorded,
// while no later write changed it (the take wrote taken as its updated;
// any later one, by a version that does not know the column too, moves
// updated alone).
func takerOf(taker string, taken, updated int64) string {
	if taken == 0 || taken != updated {
		return ""
	}
	return taker
}

// ListDeadLetters implements store.DeadLetters.
func (c *Core) ListDeadLetters(ctx context.Context, state string) ([]*store.DeadLetter, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	q := `SELECT ` + DeadColumns + ` FROM dead_letters`
	var args []any
	if state != "" {
		q += ` WHERE state = $1`
		args = append(args, state)
	}
	return queryAll(ctx, c.R, "listing dead letters", scanDead, q+` ORDER BY id`, args...)
}

// UpdateDeadLetter implements store.DeadLetters: durable when it returns.
func (c *Core) UpdateDeadLetter(ctx context.Context, d *store.DeadLetter) error {
	if c.Closed() {
		return store.ErrClosed
	}
	now := time.Now()
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StDeadUpdate, []any{d.State, d.Note, d.Error, d.Attempts, now.UnixNano(), d.ID}, func(n int64) error {
			if n == 0 {
				return fmt.Errorf("dead letter %d: %w", d.ID, store.ErrNotFound)
			}
			return nil
		})
	}})
	if err != nil {
		return wrap(err, "updating dead letter %d", d.ID)
	}
	d.Updated = store.Round(now)
	return nil
}

// TakeDeadLetter implements store.DeadLetters: the update and the read are
// one write of the writer's batch.
func (c *Core) TakeDeadLetter(ctx context.Context, id int64, taker string) (*store.DeadLetter, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	var d *store.DeadLetter
	args := []any{store.DeadTaken, time.Now().UnixNano(), id, store.DeadOpen, taker}
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		d = nil
		read := func(rows Rows) error {
			if !rows.Next() {
				return nil
			}
			var took bool
			var dl store.DeadLetter
			var created, updated, taken int64
			var taker string
			if err := rows.Scan(&took, &dl.ID, &dl.Request, &dl.Frame, &dl.Tool, &dl.Args, &dl.Error, &dl.Attempts,
				&dl.State, &dl.Note, &created, &updated, &taker, &taken, &dl.Principal, &dl.Tenant); err != nil {
				return err
			}
			dl.Args, dl.Created, dl.Updated = EmptyNil(dl.Args), store.FromUnixNano(created), store.FromUnixNano(updated)
			dl.Taker = takerOf(taker, taken, updated)
			d = &dl
			switch {
			case took:
				return nil
			case dl.State == store.DeadTaken:
				return fmt.Errorf("dead letter %d is taken: %w", id, store.ErrConflict)
			default:
				return fmt.Errorf("dead letter %d is %s: %w", id, dl.State, store.ErrNotFound)
			}
		}
		b.Query(w, StDeadTake, args, func(rows Rows) error {
			if err := read(rows); err != nil || d != nil {
				return err
			}
			b.Query(w, StDeadGet, []any{id}, read) // not taken: say why
			return nil
		})
	}})
	if err != nil {
		return nil, wrap(err, "taking dead letter %d", id)
	}
	if d == nil {
		return nil, fmt.Errorf("dead letter %d: %w", id, store.ErrNotFound)
	}
	return d, nil
}

// PutTask implements store.Tasks: durable when it returns.
func (c *Core) PutTask(ctx context.Context, t *store.TaskRecord) (bool, error) {
	if c.Closed() {
		return false, store.ErrClosed
	}
	now := time.Now()
	var n int64
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StTaskPut, []any{t.Agent, t.ID, t.Principal, t.Tenant, t.Request, t.State, t.Final, c.D.Doc(t.Data), now.UnixNano()}, count(&n))
	}})
	if err != nil {
		return false, fmt.Errorf("storing task %s of %s: %w", t.ID, t.Agent, err)
	}
	if n > 0 {
		t.Updated = store.Round(now)
	}
	return n > 0, nil
}

func scanTask(sc interface{ Scan(...any) error }) (*store.TaskRecord, error) {
	var t store.TaskRecord
	var created, updated int64
	if err := sc.Scan(&t.Agent, &t.ID, &t.Principal, &t.Tenant, &t.Request, &t.State, &t.Final, &t.Data, &created, &updated); err != nil {
		return nil, err
	}
	t.Created, t.Updated = store.FromUnixNano(created), store.FromUnixNano(updated)
	return &t, nil
}

// GetTask implements store.Tasks.
func (c *Core) GetTask(ctx context.Context, agent, id string) (*store.TaskRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return getOne(ctx, c, "task "+id+" of "+agent, scanTask, `SELECT `+taskColumns+` FROM tasks WHERE agent = $1 AND id = $2`, agent, id)
}

// ListTasks implements store.Tasks.
func (c *Core) ListTasks(ctx context.Context, agent, principal, tenant string, limit int) ([]*store.TaskRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		limit = 100
	}
	return queryAll(ctx, c.R, "listing tasks", scanTask, `SELECT `+taskColumns+` FROM tasks WHERE agent = $1 AND principal = $2 AND tenant = $3
	ORDER BY created DESC, id DESC LIMIT $4`, agent, principal, tenant, limit)
}

// QueryAudit returns the audit records that q selects (what follows the
// dialect's AuditSelect: a WHERE and an ORDER BY), read through r (the
// reader, or a read transaction). On an error of a row it returns the
// records read before it.
func (c *Core) QueryAudit(ctx context.Context, r Reader, q string, args ...any) ([]*store.AuditRecord, error) {
	rows, err := r.Query(ctx, c.D.AuditSelect+q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer rows.Close()
	var out []*store.AuditRecord
	for rows.Next() {
		var a store.AuditRecord
		var t int64
		if err := rows.Scan(&a.Seq, &t, &a.Request, &a.Data, &a.PrevHash, &a.Hash); err != nil {
			return out, fmt.Errorf("reading the audit log: %w", err)
		}
		a.Time = store.FromUnixNano(t)
		out = append(out, &a)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("reading the audit log: %w", err)
	}
	return out, nil
}

// AuditHead implements store.AuditLog.
func (c *Core) AuditHead(ctx context.Context) (int64, []byte, error) {
	if c.Closed() {
		return 0, nil, store.ErrClosed
	}
	type head struct {
		seq  int64
		hash []byte
	}
	h, err := queryOne(ctx, c.R, func(sc interface{ Scan(...any) error }) (head, error) {
		var h head
		err := sc.Scan(&h.seq, &h.hash)
		return h, err
	}, c.D.AuditHead)
	if errors.Is(err, ErrNoRows) || err == nil && h.seq == 0 {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("reading the audit head: %w", err)
	}
	return h.seq, h.hash, nil
}

// ScanAudit implements store.AuditLog.
func (c *Core) ScanAudit(ctx context.Context, after int64, limit int) ([]*store.AuditRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		return c.QueryAudit(ctx, c.R, `WHERE seq > $1 ORDER BY seq`, after)
	}
	return c.QueryAudit(ctx, c.R, `WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
}

// MatchAudit implements store.AuditMatcher: the events' fields are read in
// the query (SQLite's and PostgreSQL's ->>), newest first, until limit
// match, down to m.After (a range of the primary key, which bounds the
// rows read). The tenant is found by the index audit_tenant (on event ->>
// 'tenant' and seq, as written here: AuditTenantIndexed); a principal or
// a name without a tenant, or with one among the tenant's events, is
// read back through the rows.
func (c *Core) MatchAudit(ctx context.Context, m store.AuditMatch, before int64, limit int) ([]*store.AuditRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		return nil, nil
	}
	q, args := c.D.MatchAuditQuery(m, before, limit)
	recs, err := c.QueryAudit(ctx, c.R, q, args...)
	slices.Reverse(recs)
	return recs, err
}

// MatchAuditQuery is the WHERE, ORDER BY and LIMIT of MatchAudit, after
// d's AuditSelect, and its arguments. An event's field is read as d's
// AuditField writes it (the expression audit_tenant indexes).
func (d Dialect) MatchAuditQuery(m store.AuditMatch, before int64, limit int) (string, []any) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	add("seq < $%d", cmp.Or(before, math.MaxInt64))
	if m.After > 0 {
		add("seq > $%d", m.After)
	}
	for _, f := range [...]struct{ field, v string }{{"tenant", m.Tenant}, {"principal", m.Principal}, {"name", m.Name}} {
		if f.v != "" {
			add(d.auditField(f.field)+" = $%d", f.v)
		}
	}
	args = append(args, limit)
	return fmt.Sprintf("WHERE %s ORDER BY seq DESC LIMIT $%d", strings.Join(where, " AND "), len(args)), args
}

// auditField is the SQL expression of an audit event's field: d's
// AuditField, or event ->> 'field'.
func (d Dialect) auditField(field string) string {
	if d.AuditField != nil {
		return d.AuditField(field)
	}
	return "event ->> '" + field + "'"
}

// AuditTenantIndexed implements store.AuditTenantIndexer: whether the
// index audit_tenant (SQLite migration 18, PostgreSQL 27) was there and
// usable when the store opened (ReadIndexes); false for a database whose
// index was dropped or left invalid by hand, whose tenant's pages are then
// read back through a bounded range (TestAuditTenantIndexedTellsTheTruth).
func (c *Core) AuditTenantIndexed() bool { return c.auditTenant.Load() }

// ReadIndexes reads which of the indexes Core's reads may lean on are
// there (D.IndexReady): the store's opening calls it once R is set, after
// its migrations.
func (c *Core) ReadIndexes(ctx context.Context) error {
	rows, err := c.R.Query(ctx, c.D.IndexReady, "audit_tenant")
	if err != nil {
		return fmt.Errorf("reading the audit log's indexes: %w", err)
	}
	defer rows.Close()
	var ok bool
	if rows.Next() {
		if err := rows.Scan(&ok); err != nil {
			return fmt.Errorf("reading the audit log's indexes: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading the audit log's indexes: %w", err)
	}
	c.auditTenant.Store(ok)
	return nil
}

// AuditCheckpoints implements store.AuditLog.
func (c *Core) AuditCheckpoints(ctx context.Context) ([]store.AuditCheckpoint, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return queryAll(ctx, c.R, "reading audit checkpoints", func(sc interface{ Scan(...any) error }) (store.AuditCheckpoint, error) {
		var cp store.AuditCheckpoint
		var t int64
		err := sc.Scan(&cp.Seq, &cp.Hash, &t)
		cp.Time = store.FromUnixNano(t)
		return cp, err
	}, c.D.CheckpointSelect+` ORDER BY seq`)
}

// StoreSession implements store.Sessions: one write, waited for.
func (c *Core) StoreSession(ctx context.Context, r *store.SessionRecord) error {
	if c.Closed() {
		return store.ErrClosed
	}
	args := []any{r.Hash, r.Principal, r.Tenant, r.Protocol, c.D.Doc(r.Init), r.Request, store.UnixNano(r.Created), store.UnixNano(r.Used)}
	err := c.W.Do(ctx, &Write{What: "an MCP session's record", Run: func(b Batch, w *Write) {
		crashpoint.Reached("session.storing") // a kill here: no record, and its client has no answer
		b.Exec(w, StSessionPut, args, nil)
	}})
	if err != nil {
		return fmt.Errorf("storing an MCP session's record: %w", err)
	}
	crashpoint.Reached("session.stored") // a kill here: a record its client never heard of, swept once idle
	return nil
}

func scanSession(sc interface{ Scan(...any) error }) (*store.SessionRecord, error) {
	var r store.SessionRecord
	var created, used int64
	if err := sc.Scan(&r.Hash, &r.Principal, &r.Tenant, &r.Protocol, &r.Init, &r.Request, &created, &used); err != nil {
		return nil, err
	}
	r.Created, r.Used = store.FromUnixNano(created), store.FromUnixNano(used)
	return &r, nil
}

// GetSession implements store.Sessions.
func (c *Core) GetSession(ctx context.Context, hash string) (*store.SessionRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return getOne(ctx, c, "an MCP session's record", scanSession, `SELECT `+sessionColumns+` FROM sessions WHERE hash = $1`, hash)
}

// TouchSessions implements store.Sessions: one write.
func (c *Core) TouchSessions(ctx context.Context, used time.Time, uses []store.SessionUse) error {
	if c.Closed() {
		return store.ErrClosed
	}
	if len(uses) == 0 {
		return nil
	}
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		for _, u := range uses {
			b.Exec(w, StSessionTouch, []any{store.UnixNano(used), u.Request, u.Hash}, nil)
		}
	}})
	if err != nil {
		return fmt.Errorf("recording the use of %d MCP sessions: %w", len(uses), err)
	}
	crashpoint.Reached("sessions.touched") // a kill here: the sessions' last use stored, the next sweep not run
	return nil
}

// DeleteSession implements store.Sessions.
func (c *Core) DeleteSession(ctx context.Context, hash string) error {
	if c.Closed() {
		return store.ErrClosed
	}
	if err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) { b.Exec(w, StSessionDelete, []any{hash}, nil) }}); err != nil {
		return fmt.Errorf("deleting an MCP session's record: %w", err)
	}
	return nil
}

// SweepSessions implements store.Sessions.
func (c *Core) SweepSessions(ctx context.Context, before time.Time) (int64, error) {
	if c.Closed() {
		return 0, store.ErrClosed
	}
	var n int64
	if err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StSessionSweep, []any{store.UnixNano(before)}, count(&n))
	}}); err != nil {
		return 0, fmt.Errorf("deleting the records of idle MCP sessions: %w", err)
	}
	return n, nil
}

// PutResponseOwner implements store.ResponseOwners: one write, the sweep
// first.
func (c *Core) PutResponseOwner(ctx context.Context, r *store.ResponseOwner) error {
	if c.Closed() {
		return store.ErrClosed
	}
	created := store.UnixNano(r.Created)
	var n int64
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StOwnerSweep, []any{created}, nil)
		b.Exec(w, StOwnerPut, []any{r.Hash, r.Principal, r.Tenant, r.Endpoint, created, store.UnixNano(r.Expires)}, count(&n))
	}})
	if err != nil {
		return fmt.Errorf("recording the owner of a Responses API answer: %w", err)
	}
	if n == 0 { // another principal's, unexpired: kept
		return fmt.Errorf("recording the owner of a Responses API answer: another principal's: %w", store.ErrConflict)
	}
	crashpoint.Reached("owner.stored") // a kill here: a record of an id its client never got
	return nil
}

// GetResponseOwner implements store.ResponseOwners.
func (c *Core) GetResponseOwner(ctx context.Context, hash string) (*store.ResponseOwner, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return getOne(ctx, c, "the owner of a Responses API answer", func(sc interface{ Scan(...any) error }) (*store.ResponseOwner, error) {
		var r store.ResponseOwner
		var created, expires int64
		if err := sc.Scan(&r.Hash, &r.Principal, &r.Tenant, &r.Endpoint, &created, &expires); err != nil {
			return nil, err
		}
		r.Created, r.Expires = store.FromUnixNano(created), store.FromUnixNano(expires)
		return &r, nil
	}, `SELECT `+ownerColumns+` FROM response_owners WHERE hash = $1`, hash)
}
