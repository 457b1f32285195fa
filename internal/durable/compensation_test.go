package durable

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

// orderLog is a system of record for orders: set and unset each undo the
// other; unset of the value "hang" closes hung and never returns (the
// gateway dies in it).
type orderLog struct {
	mu          sync.Mutex
	log         []string
	hung, never chan struct{}
}

func (o *orderLog) tools() []reach.Tool {
	write := func(name string) reach.ToolFunc {
		return func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
			var in struct{ ID, V string }
			json.Unmarshal(a, &in)
			if name == "unset" && in.V == "hang" {
				close(o.hung)
				<-o.never
			}
			o.mu.Lock()
			o.log = append(o.log, name+" "+in.ID+"="+in.V)
			o.mu.Unlock()
			return a, nil
		}
	}
	return []reach.Tool{
		{Name: "set", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true, Writes: []string{"order:{id}"}, Func: write("set"),
			Undo: &reach.Followup{Tool: "unset", Args: `{"id": "{args.id}", "v": "{args.v}"}`}},
		{Name: "unset", Access: reach.Write, Reentrancy: reach.Reentrant, Idempotent: true, Writes: []string{"order:{id}"}, Func: write("unset"),
			Undo: &reach.Followup{Tool: "set", Args: `{"id": "{args.id}", "v": "{args.v}"}`}},
	}
}

func (o *orderLog) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.log, ", ")
}

// TestRecoverDoesNotRedoUndos: the gateway dies while a request's
// compensation runs, after one undo ran: recovery finishes the request's
// compensation, and does not undo the undo that ran (writing back what it
// had undone), though the tools undo each other.
func TestRecoverDoesNotRedoUndos(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	o := &orderLog{hung: make(chan struct{}), never: make(chan struct{})}
	defer close(o.never)
	old := durableRuntime(st, o.tools()...)
	rctx, req, err := old.Begin(ctx, &reach.RequestOptions{ID: "r1", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, args string }{{"s1", `{"id":"O1","v":"hang"}`}, {"s2", `{"id":"O2","v":"b"}`}} {
		if res := old.Call(rctx, &reach.Call{ID: c.id, Tool: "set", Arguments: json.RawMessage(c.args)}); res.IsError() {
			t.Fatal(res.ModelText())
		}
	}
	go req.Compensate(rctx, "a later write failed") // unset O2=b runs, then unset O1=hang never returns
	<-o.hung
	// The gateway dies here, in the compensation; the new one recovers.
	if _, err := Recover(ctx, st, durableRuntime(st, o.tools()...), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := o.String(), "set O1=hang, set O2=b, unset O2=b"; got != want {
		t.Errorf("side effects:\n got %s\nwant %s", got, want)
	}
}

// TestRecoverSkipsCompensationRequests: a compensation's request that was
// running when the gateway stopped is not compensated by recovery, even
// with an undo recorded on one of its calls (as versions that recorded the
// undo of an undo did).
func TestRecoverSkipsCompensationRequests(t *testing.T) {
	ctx := context.Background()
	st := tempStore(t)
	for _, id := range []string{"r1/compensate/0a1b2c3d", "r1/retry/4"} {
		agent := "reach"
		if strings.Contains(id, "/retry/") {
			agent = "operator"
		}
		if err := st.PutRequest(ctx, &store.Request{ID: id, Principal: "alice", Agent: agent, State: "running", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutFrame(ctx, &store.Frame{Request: id, Frame: "00000000000000a1", Kind: "tool", Name: "unset", State: "completed",
			Args: []byte(`{"id":"O1","v":"a"}`), Undo: []byte(`{"tool":"set","arguments":{"id":"O1","v":"a"},"key":"undo:00000000000000a1"}`),
			Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	o := &orderLog{}
	rep, err := Recover(ctx, st, durableRuntime(st, o.tools()...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := o.String(); got != "" || len(rep.Compensated) != 0 {
		t.Errorf("recovery ran %q (%+v), want nothing", got, rep.Compensated)
	}
	if len(rep.Interrupted) != 2 {
		t.Errorf("interrupted = %v, want both requests", rep.Interrupted)
	}
}
