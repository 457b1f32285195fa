package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// told collects the events a queue's Audit callback is told.
type told struct {
	mu     sync.Mutex
	events []Event
}

func (e *told) audit(_ context.Context, ev Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

func (e *told) of(action string) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.events {
		if ev.Action == action {
			out = append(out, ev)
		}
	}
	return out
}

func refund7(t *testing.T, l *life, req string) *reach.Result {
	return l.rt.Call(l.begin(t, req), &reach.Call{ID: "c1", Tool: "refund", IdempotencyKey: "refund-7",
		Arguments: json.RawMessage(`{"order":"7"}`)})
}

// TestDecisionElsewhereTold: a denial made on another instance sharing
// the store is told to this one's Audit, once, as Elsewhere (the frames
// that waited here end with it; the instance that denied audits it).
func TestDecisionElsewhereTold(t *testing.T) {
	st := openStore(t, t.TempDir())
	var runs atomic.Int32
	var ea, eb told
	a := newLife(t, st, &runs, &Options{Shared: true, Audit: ea.audit})
	b := newLife(t, st, &runs, &Options{Shared: true, Audit: eb.audit})
	res := refund7(t, a, "r1")
	id := WaitsFor(res.Error)
	if res.Status != reach.StatusPending || id == "" {
		t.Fatalf("the call on a: %s", res.ModelText())
	}
	if _, err := b.q.Deny(id, Actor{Principal: "alice"}, "no"); err != nil {
		t.Fatal(err)
	}
	a.q.Refresh(id)
	a.q.Refresh(id)
	if d := ea.of("denied"); len(d) != 1 || !d[0].Elsewhere || d[0].Approval.Status != Denied {
		t.Errorf("a was told %+v of the denial made on b; want it once, elsewhere", d)
	}
	if d := eb.of("denied"); len(d) != 1 || d[0].Elsewhere {
		t.Errorf("b was told %+v of its own denial; want it once, not elsewhere", d)
	}
}

// TestUnauditedActionAuditedAtLoad: an action stored and not audited (a
// kill between the two; here the mark is set by hand) is told to Audit at
// the next Load, who acted and why with it, once: the load after does
// not tell it again, nor does a load of another instance's.
func TestUnauditedActionAuditedAtLoad(t *testing.T) {
	st := openStore(t, t.TempDir())
	var runs atomic.Int32
	var e0 told
	a := newLife(t, st, &runs, &Options{Audit: e0.audit})
	res := refund7(t, a, "r1")
	id := WaitsFor(res.Error)
	if _, err := a.q.Deny(id, Actor{Principal: "alice"}, "not this one"); err != nil {
		t.Fatal(err)
	}
	if d := e0.of("denied"); len(d) != 1 {
		t.Fatalf("the denial was told %d times, want 1", len(d))
	}
	var e1 told
	newLife(t, st, &runs, &Options{Audit: e1.audit})
	if n := len(e1.of("denied")) + len(e1.of("requested")); n != 0 {
		t.Errorf("a restart after the denial was audited told %d events; want none", n)
	}
	mark := func(instance string) {
		t.Helper()
		ar, err := st.GetApproval(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]any
		if err := json.Unmarshal(ar.Data, &data); err != nil {
			t.Fatal(err)
		}
		if data["unaudited"] != nil {
			t.Fatalf("the audited denial is stored marked unaudited: %s", ar.Data)
		}
		data["unaudited"], data["instance"] = true, instance
		if ar.Data, err = json.Marshal(data); err != nil {
			t.Fatal(err)
		}
		if err := st.PutApproval(t.Context(), ar); err != nil {
			t.Fatal(err)
		}
	}
	mark("")
	var e2 told
	newLife(t, st, &runs, &Options{Audit: e2.audit})
	d := e2.of("denied")
	if len(d) != 1 || d[0].By != "alice" || !strings.Contains(d[0].Reason, "not this one") || !strings.Contains(d[0].Reason, "audited at a restart") {
		t.Fatalf("the restart after the unaudited denial told %+v; want the denial by alice, its reason, saying it is audited at a restart", d)
	}
	var e3 told
	newLife(t, st, &runs, &Options{Audit: e3.audit})
	if d := e3.of("denied"); len(d) != 0 {
		t.Errorf("a second restart told the denial again: %+v", d)
	}
	mark("b") // another instance's change: that instance audits it when it starts again
	var e4 told
	newLife(t, st, &runs, &Options{Audit: e4.audit, Shared: true, Instance: "a"})
	if d := e4.of("denied"); len(d) != 0 {
		t.Errorf("instance a audited instance b's unaudited denial: %+v", d)
	}
	var e5 told
	newLife(t, st, &runs, &Options{Audit: e5.audit, Shared: true, Instance: "b"})
	if d := e5.of("denied"); len(d) != 1 {
		t.Errorf("instance b, started again, told its unaudited denial %d times; want once", len(d))
	}
}

// TestKeepsFrame: an approval lists its first 16 waiting frames, then one
// of each other root request, up to 256; never one twice.
func TestKeepsFrame(t *testing.T) {
	a := &Approval{Request: "r0"}
	for i := range 20 {
		if f := fmt.Sprintf("%016x", i); a.keepsFrame(f, "r0") {
			a.addFrame(f, "r0")
		}
	}
	if len(a.Frames) != maxFrames {
		t.Fatalf("20 frames of one request: %d kept, want %d", len(a.Frames), maxFrames)
	}
	if a.keepsFrame(a.Frames[0], "r0") {
		t.Error("a frame kept already is kept again")
	}
	for i := range 2 * maxRoots {
		root := fmt.Sprintf("r%d", 1+i/2) // two frames each
		if f := fmt.Sprintf("%016x", 100+i); a.keepsFrame(f, root) {
			a.addFrame(f, root)
		}
	}
	if len(a.Frames) != maxRoots {
		t.Fatalf("%d frames kept, want %d", len(a.Frames), maxRoots)
	}
	seen := map[string]bool{}
	for i := maxFrames; i < len(a.Frames); i++ {
		if r := a.FrameRoot(i); seen[r] || r == "r0" {
			t.Errorf("request %s has two frames listed past the first %d", r, maxFrames)
		} else {
			seen[r] = true
		}
	}
}
