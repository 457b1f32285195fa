package durable

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// countingStore is a store that counts how requests are written.
type countingStore struct {
	store.Store
	put, queued []string
}

func (c *countingStore) PutRequest(ctx context.Context, r *store.Request) error {
	c.put = append(c.put, r.ID)
	return c.Store.PutRequest(ctx, r)
}

func (c *countingStore) QueueRequest(r *store.Request) {
	c.queued = append(c.queued, r.ID)
	c.Store.QueueRequest(r)
}

// onlyQueued reports whether one request was written, queued.
func (c *countingStore) onlyQueued() bool { return len(c.queued) == 1 && len(c.put) == 0 }

// A request whose id the runtime made (reach.Request.Fresh) begins without
// waiting for the store: no earlier request can hold its id, so there is
// nothing to refuse. A request a client names is written and checked
// before it runs (an interrupted or stopped id is refused), and so is every
// begin on several instances.
func TestFreshRequestBeginIsQueued(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		id     string
		shared bool
		queued bool
	}{
		{"made by the runtime", "", false, true},
		{"named by a client", "req_named", false, false},
		{"made by the runtime, several instances", "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &countingStore{Store: tempStore(t)}
			cp := New(st, nil, nil)
			if tc.shared {
				cp.Share("life-1")
			}
			rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DefaultBudget: &reach.Budget{}})
			_, r, err := rt.Begin(ctx, &reach.RequestOptions{ID: tc.id})
			if err != nil {
				t.Fatal(err)
			}
			if r.Fresh() != (tc.id == "") {
				t.Errorf("Fresh() = %v for id %q", r.Fresh(), tc.id)
			}
			if got := st.onlyQueued(); got != tc.queued {
				t.Errorf("begin: PutRequest %v, QueueRequest %v; want queued %v", st.put, st.queued, tc.queued)
			}
			r.End()
		})
	}
}

// A queued begin is durable before anything written after it: once a
// checkpoint of the request's first call is, so is the request.
func TestFreshRequestDurableBeforeItsCalls(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	rt := durableRuntime(st, reach.Tool{Name: "pay", Access: reach.Write, Reentrancy: reach.Reentrant,
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":true}`), nil
		}})
	cctx, r, err := rt.Begin(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := rt.Call(cctx, &reach.Call{ID: "c1", Tool: "pay", Arguments: json.RawMessage(`{"amount":1}`)}); res.Error != nil {
		t.Fatal(res.Error)
	}
	// The call's claim and "executing" checkpoint were waited for: the
	// request queued before them is in the store, without a flush.
	got, err := st.GetRequest(ctx, r.ID())
	if errors.Is(err, store.ErrNotFound) {
		t.Fatalf("request %s not stored after its call's checkpoint was", r.ID())
	}
	if err != nil || got.State != "running" {
		t.Fatalf("stored request = %+v, %v; want running", got, err)
	}
}

// The end of a request reach made is queued when nothing would be undone
// after a crash (no undo held, no sub-request); with an undo registered it
// is durable when End returns, as every end of a named request is.
func TestFreshRequestEnd(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		id     string
		tool   string
		queued bool
	}{
		{"made by the runtime, a plain write", "", "book_plain", true},
		{"made by the runtime, a write with an undo", "", "book", false},
		{"named by a client", "req_named", "book_plain", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &countingStore{Store: tempStore(t)}
			cp := New(st, nil, nil)
			rt := reach.New(&reach.Options{Checkpoints: cp, Requests: cp, DefaultBudget: &reach.Budget{}})
			rt.MustRegister(append(bookTools(func(string) {}), reach.Tool{Name: "book_plain", Access: reach.Write, Reentrancy: reach.Reentrant,
				Func: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }})...)
			cctx, r, err := rt.Begin(ctx, &reach.RequestOptions{ID: tc.id})
			if err != nil {
				t.Fatal(err)
			}
			if res := rt.Call(cctx, &reach.Call{ID: "c1", Tool: tc.tool, Arguments: json.RawMessage(`{"ref":"x"}`)}); res.Error != nil {
				t.Fatal(res.Error)
			}
			st.put, st.queued = nil, nil
			r.End()
			if got := st.onlyQueued(); got != tc.queued {
				t.Errorf("end: PutRequest %v, QueueRequest %v; want queued %v", st.put, st.queued, tc.queued)
			}
		})
	}
}
