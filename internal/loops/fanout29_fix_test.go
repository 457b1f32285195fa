package loops

import (
	"fmt"
	"testing"
)

// TestFanOutRoundsEachReceiver: hand-offs made from one turn of the
// delegator (a fan-out) were not chosen after reading each other's
// verdicts, so a round of handing a task to one of them ends with that
// receiver's own verdict, not with whichever sibling answered last. A
// pipeline, whose next hand-off comes in a later turn, still ends with the
// verdict its delegator read last (TestRewordedDelegation).
func TestFanOutRoundsEachReceiver(t *testing.T) {
	turn := by("lead", op{})
	asks := []string{"Shorten the abstract to 150 words", "Cut the abstract down to at most 150 words",
		"Please trim the abstract so it fits in 150 words", "The abstract must be 150 words or fewer: condense it"}
	const draft = "We study heat pump uptake in Dutch homes and find that subsidies shorten the payback period considerably."
	const reject = "Rejected: the abstract is still over 150 words; the sample size is missing"
	const same = "All the DOIs cited in this section resolve to published journal papers."
	fan := func(i int, editor, checker string, last bool) []op {
		ed := by("lead", verdictOf(hand("editor", asks[i]), editor))
		if last {
			ed = refused(ed, "delegation")
			return []op{turn, ed}
		}
		return []op{turn, ed, by("lead", verdictOf(hand("citation_checker", fmt.Sprintf("Resolve the DOIs cited in section %d", i+1)), checker))}
	}
	moving := func(i int) string { return fmt.Sprintf("Section %d: %d DOIs resolve, %d do not.", i+1, 6+i, i%2+1) }
	runCases(t, []testCase{
		{"a receiver answering alike while its sibling moves", nil, cat(
			fan(0, draft, moving(0), false), fan(1, draft, moving(1), false), fan(2, draft, "", true),
		)},
		{"the last sibling answering alike while the receiver moves", nil, cat(
			fan(0, "Draft v2: 188 words; cut the methods detail.", same, false),
			fan(1, "Draft v3: 171 words; cut the second example.", same, false),
			fan(2, "Draft v4: 158 words; cut the related work.", same, false),
			fan(3, "Draft v5: 149 words; cut the hedges.", same, false),
		)},
		// The price: executor and verifier handed from one turn are read
		// as a fan-out, so the executor's rounds end with its own
		// account; refused when that stays, allowed while it moves
		// whatever the verifier says.
		{"a pipeline in one turn, the executor's account the same", nil, cat(
			[]op{turn, by("lead", verdictOf(hand("editor", asks[0]), draft)), by("lead", verdictOf(hand("reviewer", "Review draft 1"), reject))},
			[]op{turn, by("lead", verdictOf(hand("editor", asks[1]), draft)), by("lead", verdictOf(hand("reviewer", "Review draft 2"), reject))},
			[]op{turn, refused(by("lead", hand("editor", asks[2])), "delegation")},
		)},
		{"a pipeline in one turn, the executor's account moving", nil, cat(
			[]op{turn, by("lead", verdictOf(hand("editor", asks[0]), "Draft v2: 188 words.")), by("lead", verdictOf(hand("reviewer", "Review draft 1"), reject))},
			[]op{turn, by("lead", verdictOf(hand("editor", asks[1]), "Draft v3: 171 words.")), by("lead", verdictOf(hand("reviewer", "Review draft 2"), reject))},
			[]op{turn, by("lead", verdictOf(hand("editor", asks[2]), "Draft v4: 158 words."))},
		)},
		{"a pipeline over turns ends with the verdict read last", nil, cat(
			[]op{turn, by("lead", verdictOf(hand("editor", asks[0]), "Draft v2: 188 words."))},
			[]op{turn, by("lead", verdictOf(hand("reviewer", "Review draft 1"), same))},
			[]op{turn, by("lead", verdictOf(hand("editor", asks[1]), "Draft v3: 171 words."))},
			[]op{turn, by("lead", verdictOf(hand("reviewer", "Review draft 2"), same))},
			[]op{turn, refused(by("lead", hand("editor", asks[2])), "delegation")},
		)},
	})
}
