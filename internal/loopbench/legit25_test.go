package loopbench

import "testing"

// TestLegit25 replays the long legitimate trajectories of
// ../loops/testdata/legit25 (written by its gen.go: 25 runs of 40 to 300
// steps in the shapes real agents produce) through Run, the path of
// `reach bench loops`: none may be refused.
func TestLegit25(t *testing.T) {
	traces, err := LoadDir("../loops/testdata/legit25")
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 25 {
		t.Fatalf("%d traces, want 25", len(traces))
	}
	for _, tr := range traces {
		steps := 0
		for _, e := range tr.Events {
			if e.Type == "model" {
				steps++
			}
		}
		if steps < 40 || steps > 300 || tr.Label.Loop {
			t.Fatalf("%s: %d steps, loop %v; want 40 to 300 steps of legitimate work", tr.ID, steps, tr.Label.Loop)
		}
	}
	r := Run(traces, nil)
	for i, tr := range traces {
		if f := r.Flags["reach"][i]; f.Flagged != nil {
			t.Errorf("%s: refused at %s: %s", tr.ID, *f.Flagged, f.Reason)
		}
	}
	if fk := r.Overall("reach").FalseKills; fk != 0 {
		t.Errorf("%d of 25 legitimate runs refused", fk)
	}
}
