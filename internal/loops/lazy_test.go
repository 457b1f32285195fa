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
// once it was let go, while Get then makes a new one each time that
// nothing keeps: a step the tree's admitted reports to Live, not to one
// of those, whose state it does not point into.
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
	if a, b := l.Get(nil), l.Get(nil); a == d || a == b {
		t.Fatal("Get after Release returned a kept Detector")
	}
}
