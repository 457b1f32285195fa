package loops

import (
	"sync"
	"testing"
)

// TestLazy: one Detector for every caller, made once, even at once; a
// verdict's refusal carries its detector in its code.
func TestLazy(t *testing.T) {
	var l Lazy
	got := make([]*Detector, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i] = l.Get(nil) })
	}
	wg.Wait()
	for _, d := range got {
		if d == nil || d != got[0] {
			t.Fatal("Lazy made more than one Detector")
		}
	}
	e := (&Verdict{Detector: "repeat", Message: "m", Suggestion: "s"}).Refusal()
	if e.Code != "loop_repeat" || e.Guard != "loops" || e.Type != "loop" || e.Message != "m" {
		t.Fatalf("Refusal = %+v", e)
	}
}

// TestLazyLive: Live is the tree's Detector, never made by it, and nil
// once it was let go, as Get is then: a step the tree admitted reports to
// Live, and a step that reaches the guard after is judged by none.
func TestLazyLive(t *testing.T) {
	var l Lazy
	if l.Live() != nil {
		t.Fatal("Live made a Detector")
	}
	d := l.Get(nil)
	if l.Live() != d {
		t.Fatal("Live is not the tree's Detector")
	}
	s := &Step{Kind: ToolCall, Tool: "save", Access: "write", Args: []byte(`{"k":1}`)}
	if v := d.Check(s); v != nil {
		t.Fatalf("Check = %+v", v)
	}
	l.Release()
	if l.Live() != nil || !l.Released() {
		t.Fatal("Live after Release is not nil")
	}
	if a := l.Get(nil); a != nil {
		t.Fatal("Get after Release made a Detector")
	}
}
