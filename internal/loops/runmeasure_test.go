package loops

import (
	"fmt"
	"slices"
	"testing"
)

// A sub-agent's verdict that names the same work each round and only how
// long its run took ("took 31 s", then "took 38 s") or when it ended says
// nothing new: the supervisor handing the same task round again is refused
// as when the verdict is word for word the same (the coder's third
// hand-off). A number new with each run of the same work made every
// verdict news, and the rounds went on unrefused however many.
func TestVerdictNamingRunTimeOnly(t *testing.T) {
	run := func(id string, verdict func(r int) string) asPlay {
		w := asRunOf(id, "graph", false)
		for r := 0; r < 8; r++ {
			w.hand("", "coder", "Address the latest review on PR #412.", verdict(r), nil)
			w.hand("", "reviewer", "Review PR #412 again.", fmt.Sprintf("Changes requested (round %d): see the comments.", r+1), nil)
		}
		return playAs(w.run)
	}
	for name, verdict := range map[string]func(r int) string{
		"took": func(r int) string {
			return fmt.Sprintf("Addressed the review on PR #412; head is 9f3c2e1 (took %d s).", 31+7*r)
		},
		"decimal": func(r int) string {
			return fmt.Sprintf("Addressed the review on PR #412 in %d.%ds; head is 9f3c2e1.", 2+r, r)
		},
		"minutes": func(r int) string {
			return fmt.Sprintf("Addressed the review on PR #412 (%dm%02ds); head is 9f3c2e1.", 1+r, 7*r)
		},
		"clock": func(r int) string {
			return fmt.Sprintf("Addressed the review on PR #412 at 14:%02d:%02d; head is 9f3c2e1.", 3+r, 11*r%60)
		},
		"millis": func(r int) string {
			return fmt.Sprintf("Addressed the review on PR #412; head is 9f3c2e1, CI %d ms.", 812+r*40)
		},
	} {
		if p := run("run-"+name, verdict); p.refusedAt != 4 || p.v.Detector != "delegation" {
			t.Errorf("%s: the same head reported each round, only the run's time new: refused at %d (%v), want the coder's third hand-off (4)", name, p.refusedAt, p.v)
		}
	}
	// A new number of the work is news still, a measure beside it or not.
	heads := []string{"b71d0a4", "e2c95f8", "5a0e7bd", "0c4f1e9", "7d41a2c", "31b9e07", "a84c5d2", "6e0f9b3"}
	if p := run("new-heads-timed", func(r int) string { return fmt.Sprintf("Pushed %s to PR #412 (took %d s).", heads[r], 31+7*r) }); p.refusedAt >= 0 {
		t.Errorf("a new commit pushed each round: refused at %d: %v", p.refusedAt, p.v)
	}
}

func TestWorkNumbers(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"head 9f3c2e1, took 31 s", "head 9f3c2e1, took 38 s", true},
		{"done in 2.4s", "done in 3.1s", true},
		{"at 12:03:44", "at 12:09:02", true},
		{"3m12s", "4m01s", true},
		{"800ms", "950 ms", true},
		{"head b71d0a4", "head e2c95f8", false},
		{"3 tests fail", "2 tests fail", false},
		{"the last 30 days", "the last 7 days", false},
		{"v1.2.3", "v1.2.4", false},
		{"3 steps", "4 steps", false},
	} {
		a, b := workNumbers(c.a, nil), workNumbers(c.b, nil)
		if slices.Equal(a, b) != c.same {
			t.Errorf("%q and %q: the same work's numbers %v, want %v", c.a, c.b, !c.same, c.same)
		}
	}
}

// A reworded task's rounds that end in the same rejection of one head,
// each saying how long the review took, go round as those that say
// nothing of it: refused.
func TestRejectionTimedOfOneHead(t *testing.T) {
	tasks := []string{"Fix the voucher handling in PR #412.", "Please fix the PR #412 voucher handling.", "Voucher handling in PR #412 needs fixing.", "Fix PR #412's voucher handling, please."}
	w := asRunOf("timed-one-head", "graph", false)
	for r, task := range tasks {
		w.hand("", "coder", task, "Done.", nil)
		w.hand("", "reviewer", fmt.Sprintf("Review PR #412, round %d.", r+1), fmt.Sprintf("Changes requested on PR #412 (head 9f3c2e1, reviewed in %d s): the voucher guard is missing; add a test for an expired voucher.", 40+9*r), nil)
	}
	if p := playAs(w.run); p.refusedAt < 0 || p.v.Detector != "delegation" {
		t.Errorf("the same rejection of one head each round, only its review's time new: refused at %d (%v), want refused", p.refusedAt, p.v)
	}
}
