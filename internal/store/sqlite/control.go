package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// Debit implements Ledger.
func (s *Store) Debit(ctx context.Context, request string, d, limit store.Spend) (store.Spend, bool, error) {
	if s.closed.Load() {
		return store.Spend{}, false, store.ErrClosed
	}
	var spent store.Spend
	var ok bool
	err := s.do(ctx, &write{run: func(b *batch) error {
		if d.Within(limit) {
			err := scanErr(b.queryRow(stLedgerDebit, request, d.Turns, d.ToolCalls, d.Tokens, d.CostNano,
				limit.Turns, limit.ToolCalls, limit.Tokens, limit.CostNano).Scan(&spent.Turns, &spent.ToolCalls, &spent.Tokens, &spent.CostNano))
			if err == nil {
				ok = true
				b.rows++
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		ok = false
		err := scanErr(b.queryRow(stLedgerGet, request).Scan(&spent.Turns, &spent.ToolCalls, &spent.Tokens, &spent.CostNano))
		if errors.Is(err, sql.ErrNoRows) {
			spent, err = store.Spend{}, nil
		}
		return err
	}})
	if err != nil {
		return store.Spend{}, false, fmt.Errorf("debiting the budget of request %s: %w", request, err)
	}
	return spent, ok, nil
}

// Spent implements Ledger.
func (s *Store) Spent(ctx context.Context, request string) (store.Spend, error) {
	if s.closed.Load() {
		return store.Spend{}, store.ErrClosed
	}
	var sp store.Spend
	err := s.r.QueryRowContext(ctx, `SELECT turns, tool_calls, tokens, cost FROM ledger WHERE request = ?`, request).
		Scan(&sp.Turns, &sp.ToolCalls, &sp.Tokens, &sp.CostNano)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Spend{}, nil
	}
	if err != nil {
		return store.Spend{}, fmt.Errorf("reading the budget spent by request %s: %w", request, err)
	}
	return sp, nil
}

// PutApproval implements Approvals.
func (s *Store) PutApproval(ctx context.Context, a *store.ApprovalRecord) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	now := time.Now()
	err := s.do(ctx, &write{run: func(b *batch) error {
		var n int64
		var err error
		if a.Version == 0 {
			n, err = b.affected(stApprovalInsert, a.ID, a.Key, a.Alt, a.Status, store.UnixNano(a.Created), store.UnixNano(a.Expires), now.UnixNano(), unsafeString(a.Data))
		} else {
			n, err = b.affected(stApprovalUpdate, a.Key, a.Alt, a.Status, store.UnixNano(a.Created), store.UnixNano(a.Expires), now.UnixNano(), unsafeString(a.Data),
				a.ID, a.Version)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			if a.Version == 0 {
				return fmt.Errorf("approval %s exists already: %w", a.ID, store.ErrConflict)
			}
			return fmt.Errorf("approval %s changed since version %d: %w", a.ID, a.Version, store.ErrConflict)
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("storing approval %s: %w", a.ID, err)
	}
	a.Version++
	a.Updated = store.Round(now)
	return nil
}

const approvalColumns = `id, key, alt, status, version, created, expires, updated, data`

func scanApproval(sc interface{ Scan(...any) error }) (*store.ApprovalRecord, error) {
	var a store.ApprovalRecord
	var created, expires, updated int64
	var data string
	if err := sc.Scan(&a.ID, &a.Key, &a.Alt, &a.Status, &a.Version, &created, &expires, &updated, &data); err != nil {
		return nil, err
	}
	a.Created, a.Expires, a.Updated, a.Data = store.FromUnixNano(created), store.FromUnixNano(expires), store.FromUnixNano(updated), []byte(data)
	return &a, nil
}

// GetApproval implements Approvals.
func (s *Store) GetApproval(ctx context.Context, id string) (*store.ApprovalRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	a, err := scanApproval(s.r.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("approval %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading approval %s: %w", id, err)
	}
	return a, nil
}

// ListApprovals implements Approvals.
func (s *Store) ListApprovals(ctx context.Context, f store.ApprovalFilter) ([]*store.ApprovalRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT ` + approvalColumns + ` FROM approvals WHERE 1`
	var args []any
	if f.Live {
		q += ` AND status IN ('pending', 'approved')`
	}
	if n := len(f.Keys); n > 0 {
		in := `(?` + strings.Repeat(", ?", n-1) + `)`
		q += ` AND (key IN ` + in + ` OR alt IN ` + in + `)`
		for range 2 {
			for _, k := range f.Keys {
				args = append(args, k)
			}
		}
	}
	rows, err := s.r.QueryContext(ctx, q+` ORDER BY created DESC, id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("listing approvals: %w", err)
	}
	defer rows.Close()
	var out []*store.ApprovalRecord
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("listing approvals: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// BumpEntities implements Entities.
func (s *Store) BumpEntities(ctx context.Context, names []string) (uint64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	var v int64
	err := s.do(ctx, &write{run: func(b *batch) error {
		if err := scanErr(b.queryRow(stEntityCounter).Scan(&v)); err != nil {
			return err
		}
		for _, n := range names {
			if _, err := b.affected(stEntitySet, n, v); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		return 0, fmt.Errorf("writing entity versions: %w", err)
	}
	return uint64(v), nil
}

// EntityVersions implements Entities.
func (s *Store) EntityVersions(ctx context.Context, names []string) (map[string]uint64, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	out := map[string]uint64{}
	for len(names) > 0 {
		n := min(len(names), 500)
		args := make([]any, n)
		for i, name := range names[:n] {
			args[i] = name
		}
		rows, err := s.r.QueryContext(ctx, `SELECT name, version FROM entities WHERE name IN (?`+strings.Repeat(", ?", n-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("reading entity versions: %w", err)
		}
		for rows.Next() {
			var name string
			var v int64
			if err := rows.Scan(&name, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading entity versions: %w", err)
			}
			out[name] = uint64(v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("reading entity versions: %w", err)
		}
		names = names[n:]
	}
	return out, nil
}

// PutPin implements Pins.
func (s *Store) PutPin(ctx context.Context, tool string, data []byte) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	now := time.Now()
	var v int64
	err := s.do(ctx, &write{run: func(b *batch) error {
		if _, err := b.affected(stPinPut, tool, unsafeString(data), now.UnixNano()); err != nil {
			return err
		}
		return scanErr(b.queryRow(stPinsVersion).Scan(&v))
	}})
	if err != nil {
		return 0, fmt.Errorf("storing the pin of %s: %w", tool, err)
	}
	return v, nil
}

// ListPins implements Pins: the pins and their version, in one read
// transaction.
func (s *Store) ListPins(ctx context.Context) (map[string][]byte, int64, error) {
	if s.closed.Load() {
		return nil, 0, store.ErrClosed
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("reading pins: %w", err)
	}
	defer tx.Rollback()
	var v int64
	if err := tx.QueryRowContext(ctx, `SELECT value FROM store_meta WHERE key = 'pins_version'`).Scan(&v); err != nil {
		return nil, 0, fmt.Errorf("reading pins: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT tool, data FROM pins`)
	if err != nil {
		return nil, 0, fmt.Errorf("reading pins: %w", err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var tool, data string
		if err := rows.Scan(&tool, &data); err != nil {
			return nil, 0, fmt.Errorf("reading pins: %w", err)
		}
		out[tool] = []byte(data)
	}
	return out, v, rows.Err()
}

// PinsVersion implements Pins.
func (s *Store) PinsVersion(ctx context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, store.ErrClosed
	}
	var v int64
	if err := s.r.QueryRowContext(ctx, `SELECT value FROM store_meta WHERE key = 'pins_version'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading the pins' version: %w", err)
	}
	return v, nil
}

// PutTask implements Tasks: durable when it returns.
func (s *Store) PutTask(ctx context.Context, t *store.TaskRecord) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	now := time.Now()
	var n int64
	err := s.do(ctx, &write{run: func(b *batch) error {
		var err error
		n, err = b.affected(stTaskPut, t.Agent, t.ID, t.Principal, t.Tenant, t.Request, t.State, t.Final, unsafeString(t.Data), now.UnixNano())
		return err
	}})
	if err != nil {
		return false, fmt.Errorf("storing task %s of %s: %w", t.ID, t.Agent, err)
	}
	if n > 0 {
		t.Updated = store.Round(now)
	}
	return n > 0, nil
}

const taskColumns = `agent, id, principal, tenant, request, state, final, data, created, updated`

func scanTask(sc interface{ Scan(...any) error }) (*store.TaskRecord, error) {
	var t store.TaskRecord
	var created, updated int64
	var data string
	if err := sc.Scan(&t.Agent, &t.ID, &t.Principal, &t.Tenant, &t.Request, &t.State, &t.Final, &data, &created, &updated); err != nil {
		return nil, err
	}
	t.Data, t.Created, t.Updated = []byte(data), store.FromUnixNano(created), store.FromUnixNano(updated)
	return &t, nil
}

// GetTask implements Tasks.
func (s *Store) GetTask(ctx context.Context, agent, id string) (*store.TaskRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	t, err := scanTask(s.r.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE agent = ? AND id = ?`, agent, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("task %s of %s: %w", id, agent, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading task %s of %s: %w", id, agent, err)
	}
	return t, nil
}

// ListTasks implements Tasks.
func (s *Store) ListTasks(ctx context.Context, agent, principal, tenant string, limit int) ([]*store.TaskRecord, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE agent = ? AND principal = ? AND tenant = ?
	ORDER BY created DESC, id DESC LIMIT ?`, agent, principal, tenant, limit)
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	defer rows.Close()
	var out []*store.TaskRecord
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("listing tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
