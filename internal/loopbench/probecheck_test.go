package loopbench

import "testing"

// checkProbe replays the held-out probe in dir through Run, the path of
// `reach bench loops`, and fails when a run's outcome (ok, early,
// false_kill or missed) is neither its label's nor the one known records
// for it. It logs the loops detected and legit runs refused, under name.
func checkProbe(t *testing.T, name, dir string, known map[string]string) {
	t.Helper()
	traces, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) < 24 {
		t.Fatalf("%d traces, want at least 24", len(traces))
	}
	r := Run(traces, nil)
	loops, detected, legit, refused := 0, 0, 0, 0
	for i, tr := range traces {
		f := r.Flags["reach"][i]
		o := Score(tr, f)
		got := "ok"
		switch {
		case o.FalseKill && tr.Label.Loop:
			got = "early"
		case o.FalseKill:
			got = "false_kill"
		case o.Missed:
			got = "missed"
		}
		if tr.Label.Loop {
			loops++
			if o.Detected {
				detected++
			}
		} else {
			legit++
			if o.FalseKill {
				refused++
			}
		}
		want := known[tr.ID]
		if want == "" {
			want = "ok"
		}
		if got != want {
			reason := ""
			if f.Flagged != nil {
				reason = " at " + *f.Flagged + ": " + f.Reason
			}
			t.Errorf("%s (%s): %s, want %s%s", tr.ID, tr.Label.Kind, got, want, reason)
		}
	}
	t.Logf("%s: %d of %d loops detected, %d of %d legit runs refused", name, detected, loops, refused, legit)
}
