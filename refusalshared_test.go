package reach_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// The count is the request's on Options.RefusalCounter: two runtimes that
// share one (the instances of a gateway on one store) stop a request whose
// calls alternate between them at its eighth refusal, not at each one's
// eighth (16).
func TestRefusedInARowShared(t *testing.T) {
	st := store.NewMemory()
	var rts [2]*reach.Runtime
	var ctxs [2]context.Context
	var reqs [2]*reach.Request
	for i := range rts {
		rts[i], _ = streakRuntime(t, &reach.Options{RefusalCounter: st, RefusalsShared: true})
		ctxs[i], reqs[i] = begin(t, rts[i], &reach.RequestOptions{ID: "shared-1", Principal: "alice"})
	}
	for n := 1; n <= 8; n++ {
		i := n % 2
		res := call(rts[i], ctxs[i], "wipe", `{}`)
		if res.Status != reach.StatusRefused {
			t.Fatalf("refusal %d: %+v", n, res)
		}
		stopped := reqs[i].StopCause() != nil
		if want := n == 8; stopped != want {
			t.Fatalf("after refusal %d (on runtime %d) stopped %v, want %v", n, i, stopped, want)
		}
		if n == 8 && !strings.Contains(strings.Join(res.Notes, "\n"), streakText) {
			t.Errorf("the eighth refusal's notes %q, want the stop's text", res.Notes)
		}
	}
}

// The count outlives the runtime: four refusals, a restart (a new runtime
// on the same store, the request begun again by its id), and the request
// is stopped at its eighth refusal. A call let through after the restart
// starts the count over, though the store held four.
func TestRefusedInARowRestart(t *testing.T) {
	st := store.NewMemory()
	life := func(id string) (*reach.Runtime, context.Context, *reach.Request) {
		rt, _ := streakRuntime(t, &reach.Options{RefusalCounter: st})
		ctx, req := begin(t, rt, &reach.RequestOptions{ID: id, Principal: "alice"})
		return rt, ctx, req
	}
	deny := func(rt *reach.Runtime, ctx context.Context, req *reach.Request, n int, stopAt int) {
		t.Helper()
		for i := 1; i <= n; i++ {
			call(rt, ctx, "wipe", `{}`)
			if stopped, want := req.StopCause() != nil, i == stopAt; stopped != want {
				t.Fatalf("refusal %d of this life: stopped %v, want %v", i, stopped, want)
			}
		}
	}
	rt, ctx, req := life("r-restart")
	deny(rt, ctx, req, 4, 0)
	req.End()
	rt, ctx, req = life("r-restart")
	deny(rt, ctx, req, 4, 4)

	rt, ctx, req = life("r-let")
	deny(rt, ctx, req, 4, 0)
	req.End()
	rt, ctx, req = life("r-let")
	if res := call(rt, ctx, "lookup", `{"q":"a"}`); res.Status != reach.StatusSuccess {
		t.Fatalf("the lookup: %+v", res)
	}
	deny(rt, ctx, req, 8, 8)
}

// failingCounter fails every count: the runtime's own count stands in.
type failingCounter struct{}

func (failingCounter) NoteRefused(context.Context, string, bool) (int64, error) {
	return 0, errors.New("store down")
}

func TestRefusedInARowCounterFails(t *testing.T) {
	rt, _ := streakRuntime(t, &reach.Options{RefusalCounter: failingCounter{}})
	ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice"})
	for i := 1; i <= 8; i++ {
		call(rt, ctx, "wipe", `{}`)
		if stopped, want := req.StopCause() != nil, i == 8; stopped != want {
			t.Fatalf("after %d refusals stopped %v, want %v", i, stopped, want)
		}
	}
}

// countingCounter counts what it is asked, to show that a call let
// through asks nothing.
type countingCounter struct {
	mu    sync.Mutex
	asked int
	store.Memory
}

func (c *countingCounter) NoteRefused(ctx context.Context, id string, reset bool) (int64, error) {
	c.mu.Lock()
	c.asked++
	c.mu.Unlock()
	return c.Memory.NoteRefused(ctx, id, reset)
}

// A call let through asks the counter nothing; only refusals do.
func TestRefusedInARowLetThroughAsksNothing(t *testing.T) {
	c := &countingCounter{Memory: *store.NewMemory()}
	rt, _ := streakRuntime(t, &reach.Options{RefusalCounter: c})
	ctx, _ := begin(t, rt, &reach.RequestOptions{Principal: "alice"})
	for _, q := range []string{"a", "b", "c"} {
		if res := call(rt, ctx, "lookup", `{"q":"`+q+`"}`); res.Status != reach.StatusSuccess {
			t.Fatalf("lookup %s: %+v", q, res)
		}
	}
	call(rt, ctx, "wipe", `{}`)
	if c.asked != 1 {
		t.Errorf("the counter was asked %d times, want once (the refusal)", c.asked)
	}
}

// A model turn refused for a reason its agent can act on (here a spent
// turns budget) counts as a tool call's refusal does, and the eighth stops
// the request with the stop's text; the turns let through between refused
// tool calls set nothing back.
func TestRefusedInARowModelTurns(t *testing.T) {
	t.Run("refused turns", func(t *testing.T) {
		rt, _ := streakRuntime(t, nil)
		ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice", Budget: &reach.Budget{Turns: 1}})
		turn(t, rt, ctx, func(context.Context) {})
		for i := 1; i <= 8; i++ {
			_, _, err := rt.BeginModel(ctx, "m")
			if err == nil {
				t.Fatalf("turn %d let through past the budget", i+1)
			}
			if stopped, want := req.StopCause() != nil, i == 8; stopped != want {
				t.Fatalf("after %d refused turns stopped %v, want %v (%v)", i, stopped, want, err)
			}
			if i == 8 && !strings.Contains(err.Error(), streakText) {
				t.Errorf("the eighth refused turn: %v, want the stop's text", err)
			}
		}
	})
	t.Run("turns between refused calls", func(t *testing.T) {
		rt, _ := streakRuntime(t, nil)
		ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice"})
		for i := 1; i <= 8; i++ {
			turn(t, rt, ctx, func(mctx context.Context) { call(rt, mctx, "wipe", `{}`) })
		}
		if req.StopCause() == nil {
			t.Error("8 refused calls, each in a turn let through: not stopped")
		}
	})
}

// A hand-off refused (the agent that made the request handed a task to
// itself: a re-entry its contract does not allow) counts; the eighth stops
// the request. A hand-off let through sets the count back.
func TestRefusedInARowHandOffs(t *testing.T) {
	rt, _ := streakRuntime(t, nil)
	ctx, req := begin(t, rt, &reach.RequestOptions{Principal: "alice", Agent: "planner"})
	handOff := func(agent string) error {
		_, sub, err := rt.Delegate(ctx, &reach.Delegation{Agent: agent, Task: "plan it"})
		if sub != nil {
			sub.End()
		}
		return err
	}
	for range 7 {
		if err := handOff("planner"); codeOf(err) != "agent_reentrancy" {
			t.Fatalf("the hand-off to itself: %v", err)
		}
	}
	if err := handOff("executor"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		err := handOff("planner")
		if stopped, want := req.StopCause() != nil, i == 8; stopped != want {
			t.Fatalf("after %d refused hand-offs since one let through, stopped %v, want %v", i, stopped, want)
		}
		if i == 8 && (err == nil || !strings.Contains(err.Error(), streakText)) {
			t.Errorf("the eighth refused hand-off: %v, want the stop's text", err)
		}
	}
}

// A call let through sets the count back in the next life too: seven
// refusals, a call let through, the request ended (a graceful restart),
// and the request begun again by its id is not stopped at its first
// refusal (the store still held seven, the let-through known to the
// ended life alone), nor before its eighth in a row. On the memory store
// and on SQLite, the data folder's.
func TestRefusedInARowLetThroughBeforeRestart(t *testing.T) {
	sq, err := sqlite.Open(t.Context(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sq.Close() })
	for _, st := range []struct {
		name string
		ctr  reach.RefusalCounter
	}{{"memory", store.NewMemory()}, {"sqlite", sq}} {
		t.Run(st.name, func(t *testing.T) {
			rt, _ := streakRuntime(t, &reach.Options{RefusalCounter: st.ctr})
			ctx, req := begin(t, rt, &reach.RequestOptions{ID: "r-let-end", Principal: "alice"})
			for i := 1; i <= 7; i++ {
				call(rt, ctx, "wipe", `{}`)
			}
			if res := call(rt, ctx, "lookup", `{"q":"a"}`); res.Status != reach.StatusSuccess {
				t.Fatalf("the lookup: %+v", res)
			}
			req.End()
			rt, _ = streakRuntime(t, &reach.Options{RefusalCounter: st.ctr})
			ctx, req = begin(t, rt, &reach.RequestOptions{ID: "r-let-end", Principal: "alice"})
			for i := 1; i <= 8; i++ {
				call(rt, ctx, "wipe", `{}`)
				if stopped, want := req.StopCause() != nil, i == 8; stopped != want {
					t.Fatalf("refusal %d after the restart: stopped %v, want %v", i, stopped, want)
				}
			}
		})
	}
}

// resetCounter counts what ResetRefused is asked.
type resetCounter struct {
	mu     sync.Mutex
	resets int
	store.Memory
}

func (c *resetCounter) ResetRefused(ctx context.Context, id string) error {
	c.mu.Lock()
	c.resets++
	c.mu.Unlock()
	return c.Memory.ResetRefused(ctx, id)
}

// The end of a request asks the counter nothing where it holds no count
// to set back: a request whose id was made for it and that was never
// refused, and any request when the rule is off. One a client named, with
// a call let through, asks it once.
func TestRefusedInARowEndAsksOnlyWhenCounted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rule  int
		id    string
		wants int
	}{{"fresh", 0, "", 0}, {"rule off", -1, "r-off", 0}, {"named", 0, "r-named", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			c := &resetCounter{Memory: *store.NewMemory()}
			rt, _ := streakRuntime(t, &reach.Options{RefusalCounter: c, RefusedInARow: tc.rule})
			ctx, req := begin(t, rt, &reach.RequestOptions{ID: tc.id, Principal: "alice"})
			if res := call(rt, ctx, "lookup", `{"q":"a"}`); res.Status != reach.StatusSuccess {
				t.Fatalf("the lookup: %+v", res)
			}
			req.End()
			if c.resets != tc.wants {
				t.Errorf("ResetRefused asked %d times at the end, want %d", c.resets, tc.wants)
			}
		})
	}
}
