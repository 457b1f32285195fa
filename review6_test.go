package reach_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach"
)

// keptCheckpoints keeps every ended checkpoint.
type keptCheckpoints struct {
	mu    sync.Mutex
	ended []reach.Checkpoint
}

func (*keptCheckpoints) Executing(context.Context, *reach.Checkpoint) error { return nil }
func (k *keptCheckpoints) Ended(_ context.Context, c *reach.Checkpoint) {
	k.mu.Lock()
	k.ended = append(k.ended, *c)
	k.mu.Unlock()
}

// TestReview6IdempotencyKeysScoped: the keys of a write (its record's,
// scoped to the principal and tenant; the call's; the key) made as one
// string: a tool that keeps the key it is given keeps the key it was
// given, whatever ran since; one principal's key, or a request id reused
// by another principal or tenant, never replays another's result, while
// the same principal's repeat does; a completed call's checkpoint carries
// the SHA-256 of its result in hex.
func TestReview6IdempotencyKeysScoped(t *testing.T) {
	cp := &keptCheckpoints{}
	rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, Checkpoints: cp})
	var (
		mu   sync.Mutex
		kept []string // the keys the tool was given, as it kept them
		runs int
	)
	rt.MustRegister(reach.Tool{Name: "put", Access: reach.Write,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			k, ok := reach.IdempotencyKey(ctx)
			if !ok {
				return nil, fmt.Errorf("no idempotency key")
			}
			mu.Lock()
			kept = append(kept, k)
			runs++
			n := runs
			mu.Unlock()
			return json.RawMessage(fmt.Sprintf(`{"run":%d,"args":%s}`, n, args)), nil
		}})
	type who struct{ principal, tenant string }
	whos := []who{{"alice", ""}, {"alice", "t1"}, {"alice", "t2"}, {"bob", ""}, {"bob", "t1"},
		{"alice\x00t1", ""}, {"", "alice"}, {strings.Repeat("p", 300), strings.Repeat("t", 300)}}
	var want []string         // the keys the tool must have been given, in order
	first := map[string]int{} // who and key -> the run that answered first
	call := func(w who, reqID, callID, key string) *reach.Result {
		ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: reqID, Principal: w.principal, Tenant: w.tenant})
		if err != nil {
			t.Fatal(err)
		}
		defer req.End()
		return rt.Call(ctx, &reach.Call{ID: callID, Tool: "put", Arguments: json.RawMessage(`{"x":1}`), IdempotencyKey: key})
	}
	for round := range 2 {
		for i, w := range whos {
			for _, key := range []string{"k1", "", strings.Repeat("k", 500)} {
				reqID := fmt.Sprintf("shared-req-%d", round) // one id, reused by every principal in turn
				res := call(w, reqID, "c1", key)
				if res.IsError() {
					t.Fatalf("%q/%q key %q: %s", w.principal, w.tenant, key, res.ModelText())
				}
				var out struct{ Run int }
				json.Unmarshal(res.Data, &out)
				mu.Lock()
				n := runs
				mu.Unlock()
				if round == 0 || key == "" {
					// The first of its key for this principal and tenant: it runs.
					if out.Run != n || res.Replayed {
						t.Errorf("round %d, %q/%q (%d), key %q: replayed run %d of another (last run %d)", round, w.principal, w.tenant, i, key, out.Run, n)
					}
					// A key of the caller's, or one derived from a request id
					// it named: the tool gets one of its own for each owner
					// (checked below).
					want = append(want, "")
					first[fmt.Sprint(i, key)] = out.Run
				} else if f := first[fmt.Sprint(i, key)]; out.Run != f {
					// The same principal and tenant repeat their key: the
					// first run's result.
					t.Errorf("%q/%q (%d), key %q again: run %d, want the first's, %d", w.principal, w.tenant, i, key, out.Run, f)
				}
			}
		}
	}
	// Round 1: the explicit keys repeat (replayed, the tool not run again);
	// the derived keys are of another request id (they run).
	mu.Lock()
	defer mu.Unlock()
	if len(kept) != len(want) {
		t.Fatalf("the tool ran %d times, want %d", len(kept), len(want))
	}
	owned := map[string]int{} // a key of the caller's, as the tool got it -> its run
	for i := range want {
		switch {
		case want[i] == "":
			if j, dup := owned[kept[i]]; dup || !strings.HasPrefix(kept[i], "put:") || strings.Contains(kept[i], "/") {
				t.Errorf("run %d: the tool kept key %q (run %d had it too: %v), want one of its owner's own, put:...", i, kept[i], j, dup)
			}
			owned[kept[i]] = i
		case kept[i] != want[i]:
			t.Errorf("run %d: the tool kept key %q, want %q", i, kept[i], want[i])
		}
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	done := 0
	for _, c := range cp.ended {
		if c.State != reach.Completed {
			continue
		}
		done++
		if len(c.ResultDigest) != 64 {
			t.Errorf("checkpoint of %s: result digest %q", c.IdempotencyKey, c.ResultDigest)
		}
	}
	if done < len(want) {
		t.Errorf("%d completed checkpoints, want at least %d", done, len(want))
	}
}

// TestReview6ResultDigestAsSpecified: the result digest of a completed
// call is the hex SHA-256 of its result data, for results of any size.
func TestReview6ResultDigestAsSpecified(t *testing.T) {
	cp := &keptCheckpoints{}
	rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, Checkpoints: cp})
	rt.MustRegister(reach.Tool{Name: "put", Access: reach.Write,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }})
	ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer req.End()
	datas := map[string]bool{}
	for i, n := range []int{0, 1, 31, 32, 64, 100_000} {
		args := fmt.Sprintf(`{"s":%q}`, strings.Repeat("a", n))
		res := rt.Call(ctx, &reach.Call{ID: fmt.Sprint("d", i), Tool: "put", Arguments: json.RawMessage(args)})
		if res.IsError() {
			t.Fatal(res.ModelText())
		}
		sum := sha256.Sum256(res.Data)
		datas[hex.EncodeToString(sum[:])] = true
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	got := 0
	for _, c := range cp.ended {
		if c.State == reach.Completed {
			got++
			if !datas[c.ResultDigest] {
				t.Errorf("checkpoint %s: result digest %s is no result's SHA-256", c.IdempotencyKey, c.ResultDigest)
			}
		}
	}
	if got != len(datas) {
		t.Errorf("%d completed checkpoints, want %d", got, len(datas))
	}
}

// TestReview6IdempotencyScopeUnambiguous: the scope of a write's
// idempotency record (principal, NUL, tenant, NUL) names one principal and
// tenant however they are spelled: principal "a\x00b" of no tenant and
// principal "a" of tenant "b\x00" (a JWT's sub and tenant claims may hold
// any character) do not share a record, so neither replays the other's
// result.
func TestReview6IdempotencyScopeUnambiguous(t *testing.T) {
	rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}})
	runs := 0
	rt.MustRegister(reach.Tool{Name: "put", Access: reach.Write,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			runs++
			return json.RawMessage(fmt.Sprintf(`{"run":%d}`, runs)), nil
		}})
	pairs := [][2]string{{"a\x00b", ""}, {"a", "b\x00"}, {"a\x00", "b"}, {"a", "\x00b"}, {"a", "b"}, {`"a\x00b"`, `""`}}
	for _, w := range pairs {
		for _, id := range []string{"c", "d"} { // the key given, and one derived from the request and call ids
			ctx, req, err := rt.Begin(context.Background(), &reach.RequestOptions{ID: "r-" + id, Principal: w[0], Tenant: w[1]})
			if err != nil {
				t.Fatal(err)
			}
			key := ""
			if id == "c" {
				key = "k"
			}
			res := rt.Call(ctx, &reach.Call{ID: id, Tool: "put", Arguments: json.RawMessage(`{}`), IdempotencyKey: key})
			req.End()
			if res.IsError() || res.Replayed {
				t.Errorf("principal %q, tenant %q, call %s: %s, replayed %v: another's record", w[0], w[1], id, res.Status, res.Replayed)
			}
		}
	}
	if runs != 2*len(pairs) {
		t.Errorf("the tool ran %d times, want %d", runs, 2*len(pairs))
	}
}
