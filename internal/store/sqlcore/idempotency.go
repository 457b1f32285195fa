package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// ClaimKey implements store.IdemRecords. The claim of a call that is not
// checkpointed (c.Frame empty) is durable when ClaimKey returns. The claim
// of a checkpointed call is answered as soon as it is decided, and is
// committed with the call's "executing" checkpoint, which the writer waits
// for (briefly) before it commits: that PutFrame returns once both are
// durable, or fails if the claim could not be committed.
func (c *Core) ClaimKey(ctx context.Context, r *store.IdemRecord) (rec *store.IdemRecord, claimed bool, err error) {
	if c.Closed() {
		return nil, false, store.ErrClosed
	}
	var found *store.IdemRecord // what the writer found, in its latest run
	w := &Write{}
	args := []any{c.D.Key(r.Key), r.Owner, r.Args, r.Request, r.Frame, store.UnixNano(r.Claimed), store.UnixNano(r.Expires)}
	read := func(rows Rows) error {
		if !rows.Next() {
			return nil
		}
		var h store.IdemRecord
		var ok bool
		var at, exp int64
		if err := rows.Scan(&ok, &h.Owner, &h.State, &h.Args, &h.Request, &h.Frame, &h.Result, &at, &exp); err != nil {
			return err
		}
		if ok {
			w.Claimed = true
			return nil
		}
		h.Key, h.Claimed, h.Expires, h.Result = r.Key, store.FromUnixNano(at), store.FromUnixNano(exp), EmptyNil(h.Result)
		found = &h
		return nil
	}
	w.Run = func(b Batch, w *Write) {
		w.Claimed, found = false, nil
		if !b.Has(StIdemGet) {
			// The claim answers with the record that holds the key.
			b.Query(w, StIdemClaim, args, read)
			return
		}
		// The claim only changes a row or not; a key held is read after it.
		b.Exec(w, StIdemClaim, args, func(n int64) error {
			if w.Claimed = n == 1; !w.Claimed {
				b.Query(w, StIdemGet, args[:1], read)
			}
			return nil
		})
	}
	if r.Frame != "" && r.Request != "" {
		err = c.W.Decide(ctx, w, frameKey(r.Request, r.Frame), func(e error) { rec, claimed = found, w.Claimed && e == nil })
	} else if err = c.W.Do(ctx, w); err == nil {
		// Read only after the writer answered: on a context's end it may
		// still be running the write.
		rec, claimed = found, w.Claimed
	}
	if err != nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: %w", r.Key, err)
	}
	if !claimed && rec == nil {
		return nil, false, fmt.Errorf("claiming idempotency key %q: no record was returned", r.Key)
	}
	return rec, claimed, nil
}

// CompleteKey implements store.IdemRecords: durable when it returns.
func (c *Core) CompleteKey(ctx context.Context, key, owner string, result []byte, expires time.Time) error {
	if c.Closed() {
		return store.ErrClosed
	}
	return wrap(c.W.Do(ctx, c.completeWrite(key, owner, result, expires)), "completing idempotency key %q", key)
}

// QueueCompleteKey implements store.IdemRecords: it returns at once, and
// the result is recorded with a later batch (a failure is logged).
func (c *Core) QueueCompleteKey(key, owner string, result []byte, expires time.Time) {
	w := c.completeWrite(key, owner, result, expires)
	w.What = "the result of idempotency key " + strconv.Quote(key)
	c.W.Queue(w)
}

func (c *Core) completeWrite(key, owner string, result []byte, expires time.Time) *Write {
	args := []any{result, store.UnixNano(expires), c.D.Key(key), owner}
	return &Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StIdemComplete, args, func(n int64) error {
			if n == 0 {
				return fmt.Errorf("completing idempotency key %q: not claimed by %s: %w", key, owner, store.ErrConflict)
			}
			return nil
		})
	}}
}

// ReleaseKey implements store.IdemRecords: durable when it returns.
func (c *Core) ReleaseKey(ctx context.Context, key, owner string) error {
	if c.Closed() {
		return store.ErrClosed
	}
	return wrap(c.W.Do(ctx, c.releaseWrite(key, owner)), "releasing idempotency key %q", key)
}

// QueueReleaseKey implements store.IdemRecords: it returns at once, and
// the claim is deleted with a later batch.
func (c *Core) QueueReleaseKey(key, owner string) {
	w := c.releaseWrite(key, owner)
	w.What = "the release of idempotency key " + strconv.Quote(key)
	c.W.Queue(w)
}

func (c *Core) releaseWrite(key, owner string) *Write {
	args := []any{c.D.Key(key), owner}
	return &Write{Run: func(b Batch, w *Write) { b.Exec(w, StIdemRelease, args, nil) }}
}

// SettleClaim implements store.IdemRecords.
func (c *Core) SettleClaim(ctx context.Context, r *store.IdemRecord, result []byte, expires time.Time) error {
	if c.Closed() {
		return store.ErrClosed
	}
	gone := func(n int64) error {
		if n == 0 {
			return fmt.Errorf("settling idempotency key %q: its claim by %s is gone: %w", r.Key, r.Owner, store.ErrConflict)
		}
		return nil
	}
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		if result == nil {
			b.Exec(w, StIdemSettleDelete, []any{c.D.Key(r.Key), r.Owner, store.UnixNano(r.Claimed)}, gone)
			return
		}
		b.Exec(w, StIdemSettleUpdate, []any{result, store.UnixNano(expires), c.D.Key(r.Key), r.Owner, store.UnixNano(r.Claimed)}, gone)
	}})
	return wrap(err, "settling idempotency key %q", r.Key)
}

// SettleKey implements store.IdemRecords. The record keeps the arguments
// and checkpoint it was claimed with, if it had any.
func (c *Core) SettleKey(ctx context.Context, key string, result []byte, expires time.Time) error {
	if c.Closed() {
		return store.ErrClosed
	}
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) {
		b.Exec(w, StIdemSettleKey, []any{c.D.Key(key), result, time.Now().UnixNano(), store.UnixNano(expires)}, nil)
	}})
	return wrap(err, "settling idempotency key %q", key)
}

// wrap says what failed, unless err is a conflict or a missing row, which
// says it already.
func wrap(err error, format string, args ...any) error {
	if err == nil || isOutcome(err) {
		return err
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

func isOutcome(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrClosed)
}

func scanIdem(sc interface{ Scan(...any) error }) (*store.IdemRecord, error) {
	var r store.IdemRecord
	var claimed, expires int64
	var key []byte
	if err := sc.Scan(&key, &r.Owner, &r.State, &r.Args, &r.Request, &r.Frame, &r.Result, &claimed, &expires); err != nil {
		return nil, err
	}
	r.Key, r.Claimed, r.Expires, r.Result = string(key), store.FromUnixNano(claimed), store.FromUnixNano(expires), EmptyNil(r.Result)
	return &r, nil
}

// ClaimedKeys implements store.IdemRecords.
func (c *Core) ClaimedKeys(ctx context.Context) ([]*store.IdemRecord, error) {
	if c.Closed() {
		return nil, store.ErrClosed
	}
	return queryAll(ctx, c.R, "listing idempotency claims", scanIdem,
		`SELECT key, `+idemColumns+` FROM idempotency WHERE state = 'claimed' ORDER BY claimed, key`)
}

// SweepKeys implements store.IdemRecords.
func (c *Core) SweepKeys(ctx context.Context, now time.Time) (int, error) {
	if c.Closed() {
		return 0, store.ErrClosed
	}
	var n int64
	err := c.W.Do(ctx, &Write{Run: func(b Batch, w *Write) { b.Exec(w, StIdemSweep, []any{now.UnixNano()}, count(&n)) }})
	if err != nil {
		return 0, fmt.Errorf("sweeping idempotency keys: %w", err)
	}
	return int(n), nil
}
