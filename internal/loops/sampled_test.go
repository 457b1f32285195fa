package loops

import (
	"fmt"
	"testing"
)

// A command seen to flip (passed, failed, passed, nothing else written in
// between) samples something the agent does not change: a run of like
// answers may go twice as long before it is refused. A command that never
// flipped, or flipped only across the agent's edits, is refused as before,
// at the fourth like answer in a row. The flip may be older than an edit
// (a bisect's next step): what was seen of the command holds.
func TestFlakyCommandSampled(t *testing.T) {
	const pass, fail = "ok  \texample.com/svc/lease\t0.912s", "--- FAIL: TestRenew (0.61s)\n    lease_test.go:77: lease expired before renewal\nFAIL"
	cmd := obj{"command": "go test -run TestRenew -count=1 ./lease/"}
	run := func(id string, steps []string) asPlay {
		w := asRunOf(id, "coding", false).acc("write", "shell", "edit_file")
		for i, s := range steps {
			switch s {
			case "edit":
				w.t("", asOK("edit_file", obj{"path": "lease.go", "text": fmt.Sprintf("v%d", i)}, "ok"))
			case "P":
				w.t("", asOK("shell", cmd, obj{"stdout": pass, "exit_code": 0}))
			case "F":
				w.t("", asOK("shell", cmd, obj{"stdout": fail, "exit_code": 1}))
			}
		}
		return playAs(w.run)
	}
	rep := func(s string, n int) []string {
		var out []string
		for range n {
			out = append(out, s)
		}
		return out
	}
	cases := []struct {
		name  string
		steps []string
		want  int
	}{
		{"never flipped", rep("P", 8), 3},
		{"flipped", append([]string{"P", "F"}, rep("P", 8)...), 8},
		// flipped before an edit (a bisect step): still a command that flips
		{"flipped, then an edit", append([]string{"P", "F", "P", "edit"}, rep("P", 8)...), 10},
		{"flipped across edits", append([]string{"P", "edit", "F", "edit"}, rep("P", 8)...), 7},
	}
	for _, c := range cases {
		if p := run(c.name, c.steps); p.refusedAt != c.want || p.v == nil || p.v.Detector != "short_cycle" {
			t.Errorf("%s: refused at %d (%v), want %d", c.name, p.refusedAt, p.v, c.want)
		}
	}
}
