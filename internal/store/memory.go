package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/entities"
)

// Memory is a Store that keeps everything in memory, for unit tests and
// runtimes that need nothing to survive them. It copies what it is given
// and what it returns, and rounds times to what SQLite keeps (Unix
// nanoseconds, local time zone), so that it behaves like the durable
// stores. The zero value is not usable; make one with NewMemory. Safe for
// concurrent use.
type Memory struct {
	mu       sync.Mutex
	closed   bool
	requests map[string]*Request
	frames   map[string]map[string]*Frame // request -> frame id -> frame
	frameSeq map[*Frame]int64             // insertion order
	nextSeq  int64
	idem     map[string]*IdemRecord
	audit    []*AuditRecord // audit[i].Seq == i+1
	cps      []AuditCheckpoint
	dead     []*DeadLetter
	ledger   map[string]Spend
	refused  map[string]int64
	apprs    map[string]*ApprovalRecord
	entities map[string]uint64
	entityV  uint64
	pins     map[string][]byte
	pinsV    int64
	tasks    map[[2]string]*TaskRecord
	sessions map[string]*SessionRecord
	owners   map[string]*ResponseOwner
	handed   []*HandedTask
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{
		requests: map[string]*Request{},
		frames:   map[string]map[string]*Frame{},
		frameSeq: map[*Frame]int64{},
		idem:     map[string]*IdemRecord{},
		ledger:   map[string]Spend{},
		refused:  map[string]int64{},
		apprs:    map[string]*ApprovalRecord{},
		entities: map[string]uint64{},
		pins:     map[string][]byte{},
		tasks:    map[[2]string]*TaskRecord{},
		sessions: map[string]*SessionRecord{},
		owners:   map[string]*ResponseOwner{},
	}
}

// Close implements Store. Later calls fail with ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

func (m *Memory) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Round gives t the precision and zone a durable store returns.
func Round(t time.Time) time.Time { return FromUnixNano(UnixNano(t)) }

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// QueueRequest implements Requests: the memory store writes it at once
// (a final state's conflict is dropped, as a queued write's failure is
// only logged).
func (m *Memory) QueueRequest(r *Request) { m.PutRequest(context.Background(), r) }

// PutRequest implements Requests.
func (m *Memory) PutRequest(ctx context.Context, r *Request) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if old, ok := m.requests[r.ID]; ok && (old.State == "interrupted" || old.State == "stopped" && r.State != "stopped" ||
		old.State == "ended" && old.Parent != "" && old.Parent != r.Parent) {
		state := "interrupted by a restart"
		switch old.State {
		case "stopped":
			state = "stopped"
		case "ended":
			state = "a hand-off of request " + old.Parent + " that ended"
		}
		return fmt.Errorf("storing request %s: it was %s, and stays so: %w", r.ID, state, ErrConflict)
	}
	r.Updated = Round(time.Now())
	c := *copyRequest(r)
	c.Started, c.Ended = Round(r.Started), Round(r.Ended)
	m.requests[r.ID] = &c
	return nil
}

// GetRequest implements Requests.
func (m *Memory) GetRequest(ctx context.Context, id string) (*Request, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	r, ok := m.requests[id]
	if !ok {
		return nil, fmt.Errorf("request %s: %w", id, ErrNotFound)
	}
	return copyRequest(r), nil
}

func copyRequest(r *Request) *Request {
	c := *r
	c.Budget, c.Usage, c.Cause = clone(r.Budget), clone(r.Usage), clone(r.Cause)
	c.Roles, c.Attrs = slices.Clone(r.Roles), maps.Clone(r.Attrs)
	return &c
}

// ListRequests implements Requests.
func (m *Memory) ListRequests(ctx context.Context, f RequestFilter) ([]*Request, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	var out []*Request
	for _, r := range m.requests {
		if f.State != "" && r.State != f.State {
			continue
		}
		if f.Parent != "" && r.Parent != f.Parent || f.Roots && r.Parent != "" {
			continue
		}
		if !f.Before.IsZero() && !r.Started.Before(f.Before) || !strings.HasPrefix(r.ID, f.IDPrefix) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Request) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	for i, r := range out {
		out[i] = copyRequest(r)
	}
	return out, nil
}

// PutFrame implements Frames.
func (m *Memory) PutFrame(ctx context.Context, f *Frame) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.putFrame(f)
	return nil
}

// putFrame stores f; m.mu is held.
func (m *Memory) putFrame(f *Frame) {
	f.Updated = Round(time.Now())
	c := *f
	c.Args, c.Undo, c.Error = clone(f.Args), clone(f.Undo), clone(f.Error)
	c.Started = Round(f.Started)
	byID := m.frames[f.Request]
	if byID == nil {
		byID = map[string]*Frame{}
		m.frames[f.Request] = byID
	}
	seq := m.nextSeq
	if old, ok := byID[f.Frame]; ok {
		seq = m.frameSeq[old]
		delete(m.frameSeq, old)
	} else {
		m.nextSeq++
	}
	byID[f.Frame] = &c
	m.frameSeq[&c] = seq
}

// QueueFrame implements Frames: a Memory writes it at once.
func (m *Memory) QueueFrame(f *Frame) { m.PutFrame(context.Background(), f) }

func (m *Memory) sortFrames(fs []*Frame) []*Frame {
	slices.SortFunc(fs, func(a, b *Frame) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return cmp.Compare(m.frameSeq[a], m.frameSeq[b])
	})
	for i, f := range fs {
		c := *f
		c.Args, c.Undo, c.Error = clone(f.Args), clone(f.Undo), clone(f.Error)
		fs[i] = &c
	}
	return fs
}

// RequestFrames implements Frames.
func (m *Memory) RequestFrames(ctx context.Context, request string) ([]*Frame, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*Frame
	for _, f := range m.frames[request] {
		out = append(out, f)
	}
	return m.sortFrames(out), nil
}

// OpenFrames implements Frames.
func (m *Memory) OpenFrames(ctx context.Context) ([]*Frame, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*Frame
	for _, byID := range m.frames {
		for _, f := range byID {
			if !FrameDone(f.State) {
				out = append(out, f)
			}
		}
	}
	return m.sortFrames(out), nil
}

func copyIdem(r *IdemRecord) *IdemRecord {
	c := *r
	c.Result = clone(r.Result)
	return &c
}

// live reports whether a record still holds its key at now.
func live(r *IdemRecord, now time.Time) bool {
	return r.Expires.IsZero() || now.Before(r.Expires)
}

// ClaimKey implements IdemRecords.
func (m *Memory) ClaimKey(ctx context.Context, c *IdemRecord) (*IdemRecord, bool, error) {
	if err := m.lock(ctx); err != nil {
		return nil, false, err
	}
	defer m.mu.Unlock()
	if r, ok := m.idem[c.Key]; ok && (r.State != IdemDone || live(r, c.Claimed)) {
		return copyIdem(r), false, nil
	}
	m.idem[c.Key] = &IdemRecord{Key: c.Key, Owner: c.Owner, State: IdemClaimed, Args: c.Args, Request: c.Request, Frame: c.Frame,
		Claimed: Round(c.Claimed), Expires: Round(c.Expires)}
	if c.Executing != nil {
		m.putFrame(c.Executing)
	}
	return nil, true, nil
}

// CompleteKey implements IdemRecords.
func (m *Memory) CompleteKey(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	r, ok := m.idem[key]
	if !ok || r.Owner != owner || r.State != IdemClaimed {
		return fmt.Errorf("completing idempotency key %q: not claimed by %s: %w", key, owner, ErrConflict)
	}
	r.State, r.Result, r.Expires = IdemDone, clone(result), Round(expires)
	return nil
}

// ReleaseKey implements IdemRecords.
func (m *Memory) ReleaseKey(ctx context.Context, key, owner string) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if r, ok := m.idem[key]; ok && r.Owner == owner && r.State == IdemClaimed {
		delete(m.idem, key)
	}
	return nil
}

// QueueCompleteKey implements IdemRecords: a Memory completes at once.
func (m *Memory) QueueCompleteKey(key, owner string, result []byte, expires time.Time) {
	m.CompleteKey(context.Background(), key, owner, result, expires)
}

// QueueReleaseKey implements IdemRecords: a Memory releases at once.
func (m *Memory) QueueReleaseKey(key, owner string) { m.ReleaseKey(context.Background(), key, owner) }

// SettleClaim implements IdemRecords.
func (m *Memory) SettleClaim(ctx context.Context, c *IdemRecord, result []byte, expires time.Time) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	r, ok := m.idem[c.Key]
	if !ok || r.State != IdemClaimed || r.Owner != c.Owner || !r.Claimed.Equal(Round(c.Claimed)) {
		return fmt.Errorf("settling idempotency key %q: its claim by %s is gone: %w", c.Key, c.Owner, ErrConflict)
	}
	if result == nil {
		delete(m.idem, c.Key)
		return nil
	}
	r.State, r.Result, r.Expires = IdemDone, clone(result), Round(expires)
	return nil
}

// SettleKey implements IdemRecords.
func (m *Memory) SettleKey(ctx context.Context, key string, result []byte, expires time.Time) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	r, ok := m.idem[key]
	if !ok {
		r = &IdemRecord{Key: key, Claimed: Round(time.Now())}
		m.idem[key] = r
	}
	r.State, r.Result, r.Expires = IdemDone, clone(result), Round(expires)
	return nil
}

// ClaimedKeys implements IdemRecords.
func (m *Memory) ClaimedKeys(ctx context.Context) ([]*IdemRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*IdemRecord
	for _, r := range m.idem {
		if r.State == IdemClaimed {
			out = append(out, copyIdem(r))
		}
	}
	slices.SortFunc(out, func(a, b *IdemRecord) int {
		return cmp.Or(a.Claimed.Compare(b.Claimed), strings.Compare(a.Key, b.Key))
	})
	return out, nil
}

// SweepKeys implements IdemRecords.
func (m *Memory) SweepKeys(ctx context.Context, now time.Time) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	n := 0
	for k, r := range m.idem {
		if r.State == IdemDone && !live(r, now) {
			delete(m.idem, k)
			n++
		}
	}
	return n, nil
}

func copyAudit(e *AuditRecord) *AuditRecord {
	c := *e
	c.Data, c.PrevHash, c.Hash = clone(e.Data), clone(e.PrevHash), clone(e.Hash)
	c.Time = Round(e.Time)
	return &c
}

// AppendAudit implements AuditLog.
func (m *Memory) AppendAudit(ctx context.Context, events []*AuditRecord, cps []AuditCheckpoint) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if err := Follows(events, int64(len(m.audit))); err != nil {
		return err
	}
	for _, e := range events {
		m.audit = append(m.audit, copyAudit(e))
	}
	for _, cp := range cps {
		if !slices.ContainsFunc(m.cps, func(c AuditCheckpoint) bool { return c.Seq == cp.Seq }) {
			m.cps = append(m.cps, AuditCheckpoint{Seq: cp.Seq, Hash: clone(cp.Hash), Time: Round(cp.Time)})
		}
	}
	slices.SortFunc(m.cps, func(a, b AuditCheckpoint) int { return cmp.Compare(a.Seq, b.Seq) })
	return nil
}

// AuditHead implements AuditLog.
func (m *Memory) AuditHead(ctx context.Context) (int64, []byte, error) {
	if err := m.lock(ctx); err != nil {
		return 0, nil, err
	}
	defer m.mu.Unlock()
	if len(m.audit) == 0 {
		return 0, nil, nil
	}
	last := m.audit[len(m.audit)-1]
	return last.Seq, clone(last.Hash), nil
}

// ScanAudit implements AuditLog.
func (m *Memory) ScanAudit(ctx context.Context, after int64, limit int) ([]*AuditRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	after = max(after, 0)
	if after >= int64(len(m.audit)) {
		return nil, nil
	}
	rest := m.audit[after:]
	if limit > 0 && len(rest) > limit {
		rest = rest[:limit]
	}
	out := make([]*AuditRecord, len(rest))
	for i, e := range rest {
		out[i] = copyAudit(e)
	}
	return out, nil
}

// RequestAudit implements AuditLog.
func (m *Memory) RequestAudit(ctx context.Context, request string) ([]*AuditRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*AuditRecord
	for _, e := range m.audit {
		if e.Request == request {
			out = append(out, copyAudit(e))
		}
	}
	return out, nil
}

// RequestTree implements RequestTreer.
func (m *Memory) RequestTree(ctx context.Context, root string, limit int) ([]string, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	subs := map[string][]string{}
	for _, r := range m.requests {
		if r.Parent != "" {
			subs[r.Parent] = append(subs[r.Parent], r.ID)
		}
	}
	ids := []string{root}
	seen := map[string]bool{root: true}
	for i := 0; i < len(ids) && len(ids) < limit; i++ {
		for _, id := range subs[ids[i]] {
			if !seen[id] && len(ids) < limit {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// RequestsAudit implements RequestsAuditor.
func (m *Memory) RequestsAudit(ctx context.Context, requests []string, after, upTo int64, limit int) ([]*AuditRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	want := make(map[string]bool, len(requests))
	for _, r := range requests {
		want[r] = true
	}
	after, upTo = max(after, 0), min(upTo, int64(len(m.audit)))
	var out []*AuditRecord
	for seq := after + 1; seq <= upTo && len(out) < limit; seq++ {
		if e := m.audit[seq-1]; want[e.Request] {
			out = append(out, copyAudit(e))
		}
	}
	return out, nil
}

// MatchAudit implements AuditMatcher.
func (m *Memory) MatchAudit(ctx context.Context, match AuditMatch, before int64, limit int) ([]*AuditRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return m.auditBack(before, match.After, limit, func(e *AuditRecord) bool {
		var f struct{ Tenant, Principal, Name string }
		return json.Unmarshal(e.Data, &f) == nil &&
			(match.Tenant == "" || f.Tenant == match.Tenant) && (match.Principal == "" || f.Principal == match.Principal) && (match.Name == "" || f.Name == match.Name)
	}), nil
}

// auditBack returns up to limit records that keep takes, newest first from
// before (0: the log's head) back to after, in the log's order. m.mu is held.
func (m *Memory) auditBack(before, after int64, limit int, keep func(*AuditRecord) bool) []*AuditRecord {
	last := int64(len(m.audit))
	if before > 0 {
		last = min(last, before-1)
	}
	var out []*AuditRecord
	for seq := last; seq >= max(1, after+1) && len(out) < limit; seq-- {
		if e := m.audit[seq-1]; keep(e) {
			out = append(out, copyAudit(e))
		}
	}
	slices.Reverse(out)
	return out
}

// RequestAuditBefore implements RequestAuditPager.
func (m *Memory) RequestAuditBefore(ctx context.Context, request string, before int64, limit int) ([]*AuditRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return m.auditBack(before, 0, limit, func(e *AuditRecord) bool { return e.Request == request }), nil
}

// AuditCheckpoints implements AuditLog.
func (m *Memory) AuditCheckpoints(ctx context.Context) ([]AuditCheckpoint, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]AuditCheckpoint, len(m.cps))
	for i, cp := range m.cps {
		out[i] = AuditCheckpoint{Seq: cp.Seq, Hash: clone(cp.Hash), Time: cp.Time}
	}
	return out, nil
}

// AddDeadLetter implements DeadLetters.
func (m *Memory) AddDeadLetter(ctx context.Context, d *DeadLetter) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	now := Round(time.Now())
	d.ID = int64(len(m.dead)) + 1
	d.State, d.Created, d.Updated = DeadOpen, now, now
	c := *d
	c.Args = clone(d.Args)
	m.dead = append(m.dead, &c)
	return d.ID, nil
}

// ListDeadLetters implements DeadLetters.
func (m *Memory) ListDeadLetters(ctx context.Context, state string) ([]*DeadLetter, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*DeadLetter
	for _, d := range m.dead {
		if state == "" || d.State == state {
			c := *d
			c.Args = clone(d.Args)
			out = append(out, &c)
		}
	}
	return out, nil
}

// UpdateDeadLetter implements DeadLetters.
func (m *Memory) UpdateDeadLetter(ctx context.Context, d *DeadLetter) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if d.ID < 1 || d.ID > int64(len(m.dead)) {
		return fmt.Errorf("dead letter %d: %w", d.ID, ErrNotFound)
	}
	o := m.dead[d.ID-1]
	o.State, o.Note, o.Error, o.Attempts, o.Taker = d.State, d.Note, d.Error, d.Attempts, ""
	o.Updated = Round(time.Now())
	d.Updated = o.Updated
	return nil
}

// Debit implements Ledger.
func (m *Memory) Debit(ctx context.Context, request string, d, limit Spend) (Spend, bool, error) {
	if err := m.lock(ctx); err != nil {
		return Spend{}, false, err
	}
	defer m.mu.Unlock()
	after := m.ledger[request].plus(d)
	if !after.Within(limit) {
		return m.ledger[request], false, nil
	}
	m.ledger[request] = after
	return after, true, nil
}

// NoteRefused implements Refusals.
func (m *Memory) NoteRefused(ctx context.Context, request string, reset bool) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	if reset {
		m.refused[request] = 0
	}
	m.refused[request]++
	return m.refused[request], nil
}

// ResetRefused implements Refusals.
func (m *Memory) ResetRefused(ctx context.Context, request string) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if m.refused[request] != 0 {
		m.refused[request] = 0
	}
	return nil
}

// Spent implements Ledger.
func (m *Memory) Spent(ctx context.Context, request string) (Spend, error) {
	if err := m.lock(ctx); err != nil {
		return Spend{}, err
	}
	defer m.mu.Unlock()
	return m.ledger[request], nil
}

func copyApproval(a *ApprovalRecord) *ApprovalRecord {
	c := *a
	c.Data = clone(a.Data)
	return &c
}

// PutApproval implements Approvals.
func (m *Memory) PutApproval(ctx context.Context, a *ApprovalRecord) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	old, ok := m.apprs[a.ID]
	switch {
	case a.Version == 0 && ok:
		return fmt.Errorf("storing approval %s: it exists already: %w", a.ID, ErrConflict)
	case a.Version != 0 && (!ok || old.Version != a.Version):
		return fmt.Errorf("storing approval %s: it changed since version %d: %w", a.ID, a.Version, ErrConflict)
	}
	a.Version++
	a.Updated = Round(time.Now())
	c := copyApproval(a)
	c.Created, c.Expires = Round(a.Created), Round(a.Expires)
	m.apprs[a.ID] = c
	return nil
}

// GetApproval implements Approvals.
func (m *Memory) GetApproval(ctx context.Context, id string) (*ApprovalRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	a, ok := m.apprs[id]
	if !ok {
		return nil, fmt.Errorf("approval %s: %w", id, ErrNotFound)
	}
	return copyApproval(a), nil
}

// ListApprovals implements Approvals.
func (m *Memory) ListApprovals(ctx context.Context, f ApprovalFilter) ([]*ApprovalRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*ApprovalRecord
	for _, a := range m.apprs {
		if f.Live && a.Status != ApprovalPending && a.Status != ApprovalApproved {
			continue
		}
		if len(f.Keys) > 0 && !slices.Contains(f.Keys, a.Key) && (a.Alt == "" || !slices.Contains(f.Keys, a.Alt)) {
			continue
		}
		if f.Unaudited && !bytes.Contains(a.Data, []byte(UnauditedMark)) {
			continue
		}
		out = append(out, copyApproval(a))
	}
	slices.SortFunc(out, func(a, b *ApprovalRecord) int {
		return cmp.Or(b.Created.Compare(a.Created), strings.Compare(b.ID, a.ID))
	})
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// BumpEntities implements Entities.
func (m *Memory) BumpEntities(ctx context.Context, names []string) (uint64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	m.entityV++
	for _, n := range names {
		m.entities[n] = m.entityV
	}
	return m.entityV, nil
}

// ClaimEntities implements Entities.
func (m *Memory) ClaimEntities(ctx context.Context, claims []entities.Claim) (uint64, []string, error) {
	if err := m.lock(ctx); err != nil {
		return 0, nil, err
	}
	defer m.mu.Unlock()
	m.entityV++
	var stale []string
	for _, c := range claims {
		if c.Check && m.entities[c.Name] != c.From {
			stale = append(stale, c.Name)
			continue
		}
		m.entities[c.Name] = m.entityV
	}
	return m.entityV, stale, nil
}

// EntityVersions implements Entities.
func (m *Memory) EntityVersions(ctx context.Context, names []string) (map[string]uint64, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := map[string]uint64{}
	for _, n := range names {
		if v, ok := m.entities[n]; ok {
			out[n] = v
		}
	}
	return out, nil
}

// PutPin implements Pins.
func (m *Memory) PutPin(ctx context.Context, tool string, data []byte) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	m.pins[tool] = clone(data)
	m.pinsV++
	return m.pinsV, nil
}

// PutPins implements Pins.
func (m *Memory) PutPins(ctx context.Context, data map[string][]byte) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	for tool, d := range data {
		if d == nil {
			delete(m.pins, tool)
			continue
		}
		m.pins[tool] = clone(d)
	}
	m.pinsV++
	return m.pinsV, nil
}

// ListPins implements Pins.
func (m *Memory) ListPins(ctx context.Context) (map[string][]byte, int64, error) {
	if err := m.lock(ctx); err != nil {
		return nil, 0, err
	}
	defer m.mu.Unlock()
	out := make(map[string][]byte, len(m.pins))
	for t, d := range m.pins {
		out[t] = clone(d)
	}
	return out, m.pinsV, nil
}

// PinsVersion implements Pins.
func (m *Memory) PinsVersion(ctx context.Context) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	return m.pinsV, nil
}

// TakeDeadLetter implements DeadLetters.
func (m *Memory) TakeDeadLetter(ctx context.Context, id int64, taker string) (*DeadLetter, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	if id < 1 || id > int64(len(m.dead)) {
		return nil, fmt.Errorf("dead letter %d: %w", id, ErrNotFound)
	}
	o := m.dead[id-1]
	switch o.State {
	case DeadTaken:
		return nil, fmt.Errorf("dead letter %d is taken: %w", id, ErrConflict)
	case DeadOpen:
	default:
		return nil, fmt.Errorf("dead letter %d is %s: %w", id, o.State, ErrNotFound)
	}
	o.State, o.Updated, o.Taker = DeadTaken, Round(time.Now()), taker
	c := *o
	c.Args = clone(o.Args)
	return &c, nil
}

// PutTask implements Tasks.
func (m *Memory) PutTask(ctx context.Context, t *TaskRecord) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	k := [2]string{t.Agent, t.ID}
	old := m.tasks[k]
	if old != nil && old.Final {
		return false, nil
	}
	c := *t
	c.Data = clone(t.Data)
	c.Updated = Round(time.Now())
	c.Created = c.Updated
	if old != nil {
		c.Created = old.Created
	}
	m.tasks[k] = &c
	t.Updated = c.Updated
	return true, nil
}

// GetTask implements Tasks.
func (m *Memory) GetTask(ctx context.Context, agent, id string) (*TaskRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	t := m.tasks[[2]string{agent, id}]
	if t == nil {
		return nil, fmt.Errorf("task %s of %s: %w", id, agent, ErrNotFound)
	}
	c := *t
	c.Data = clone(t.Data)
	return &c, nil
}

// ListTasks implements Tasks.
func (m *Memory) ListTasks(ctx context.Context, agent, principal, tenant string, limit int) ([]*TaskRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*TaskRecord
	for _, t := range m.tasks {
		if t.Agent == agent && t.Principal == principal && t.Tenant == tenant {
			c := *t
			c.Data = clone(t.Data)
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, func(a, b *TaskRecord) int {
		return cmp.Or(b.Created.Compare(a.Created), strings.Compare(b.ID, a.ID))
	})
	if limit <= 0 {
		limit = 100
	}
	return out[:min(len(out), limit)], nil
}

// StoreSession implements Sessions.
func (m *Memory) StoreSession(ctx context.Context, r *SessionRecord) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	c := *r
	c.Init = clone(r.Init)
	c.Created, c.Used = Round(c.Created), Round(c.Used)
	m.sessions[r.Hash] = &c
	return nil
}

// GetSession implements Sessions.
func (m *Memory) GetSession(ctx context.Context, hash string) (*SessionRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	r := m.sessions[hash]
	if r == nil {
		return nil, fmt.Errorf("an MCP session's record: %w", ErrNotFound)
	}
	c := *r
	c.Init = clone(r.Init)
	return &c, nil
}

// TouchSessions implements Sessions.
func (m *Memory) TouchSessions(ctx context.Context, used time.Time, uses []SessionUse) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	for _, u := range uses {
		if r := m.sessions[u.Hash]; r != nil {
			r.Used, r.Request = Round(used), u.Request
		}
	}
	return nil
}

// DeleteSession implements Sessions.
func (m *Memory) DeleteSession(ctx context.Context, hash string) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	delete(m.sessions, hash)
	return nil
}

// SweepSessions implements Sessions.
func (m *Memory) SweepSessions(ctx context.Context, before time.Time) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	var n int64
	for h, r := range m.sessions {
		if r.Used.Before(before) {
			delete(m.sessions, h)
			n++
		}
	}
	return n, nil
}

// PutResponseOwner implements ResponseOwners.
func (m *Memory) PutResponseOwner(ctx context.Context, r *ResponseOwner) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	created := Round(r.Created)
	for h, o := range m.owners {
		if !o.Expires.After(created) {
			delete(m.owners, h)
		}
	}
	if o := m.owners[r.Hash]; o != nil && (o.Principal != r.Principal || o.Tenant != r.Tenant) {
		return fmt.Errorf("recording the owner of a Responses API answer: another principal's: %w", ErrConflict)
	}
	c := *r
	c.Created, c.Expires = created, Round(r.Expires)
	m.owners[r.Hash] = &c
	return nil
}

// GetResponseOwner implements ResponseOwners.
func (m *Memory) GetResponseOwner(ctx context.Context, hash string) (*ResponseOwner, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	r := m.owners[hash]
	if r == nil {
		return nil, fmt.Errorf("the owner of a Responses API answer: %w", ErrNotFound)
	}
	c := *r
	return &c, nil
}
