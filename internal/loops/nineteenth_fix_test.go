package loops

import (
	"fmt"
	"testing"
)

// The same sub-task handed to one agent again and again is refused at the
// third hand-off when its verdicts say the same thing, reworded or not; a
// verdict that names a number neither of the last two named (another
// commit pushed, another fix applied) is news, and the hand-offs go on.
// A verdict whose words move but whose numbers do not ("Addressed the
// review; head is 9f3c2e1" said another way) is still the same.
func TestVerdictNamingNewNumber(t *testing.T) {
	run := func(id string, verdict func(r int) string) asPlay {
		w := asRunOf(id, "graph", false)
		for r := 0; r < 4; r++ {
			w.hand("", "coder", "Address the latest review on PR #412.", verdict(r), nil)
			w.hand("", "reviewer", "Review PR #412 again.", fmt.Sprintf("Changes requested (round %d): see the comments.", r+1), nil)
		}
		return playAs(w.run)
	}
	heads := []string{"b71d0a4", "e2c95f8", "5a0e7bd", "0c4f1e9"}
	if p := run("new-heads", func(r int) string { return "Pushed " + heads[r] + " to PR #412." }); p.refusedAt >= 0 {
		t.Errorf("a new commit pushed each round: refused at %d: %v", p.refusedAt, p.v)
	}
	same := []string{"Addressed the review on PR #412; head is 9f3c2e1.", "Review on PR #412 addressed, head is 9f3c2e1.", "Addressed the review on PR #412; head is 9f3c2e1.", "Review addressed on PR #412; the head is 9f3c2e1."}
	if p := run("same-head", func(r int) string { return same[r] }); p.refusedAt != 4 || p.v.Detector != "delegation" {
		t.Errorf("the same head reported each round: refused at %d (%v), want the coder's third hand-off (4)", p.refusedAt, p.v)
	}
}

// Rounds of a reworded task end in the same rejection when the rejection
// lists as many points again, each sharing a word with the last one's; a
// rejection that names a number the last did not (the review of another
// head) is of other work, and the rounds go on.
func TestRejectionOfAnotherHead(t *testing.T) {
	tasks := []string{"Fix the voucher handling in PR #412.", "Please fix the PR #412 voucher handling.", "Voucher handling in PR #412 needs fixing.", "Fix PR #412's voucher handling, please."}
	run := func(id string, heads []string) asPlay {
		w := asRunOf(id, "graph", false)
		for r, task := range tasks {
			w.hand("", "coder", task, "Done.", nil)
			w.hand("", "reviewer", fmt.Sprintf("Review PR #412, round %d.", r+1), "Changes requested on PR #412 (head "+heads[r]+"): the voucher guard is missing; add a test for an expired voucher.", nil)
		}
		return playAs(w.run)
	}
	if p := run("other-heads", []string{"9f3c2e1", "b71d0a4", "e2c95f8", "5a0e7bd"}); p.refusedAt >= 0 {
		t.Errorf("a rejection of another head each round: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("one-head", []string{"9f3c2e1", "9f3c2e1", "9f3c2e1", "9f3c2e1"}); p.refusedAt < 0 || p.v.Detector != "delegation" {
		t.Errorf("the same rejection of one head each round: refused at %d (%v), want refused", p.refusedAt, p.v)
	}
}
