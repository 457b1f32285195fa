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
