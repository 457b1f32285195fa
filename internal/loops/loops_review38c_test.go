package loops

import (
	"strings"
	"testing"
)

// TestRewordedAskHistoryGrows: an agent that keeps its conversation (a
// chat agent under one contextId) asked one question reworded, answering
// the same each time: its prompt's token count grows by the turns before
// (the last question and the last answer, read again), its reply's stays.
// That growth is the exchange's, as a rewording's is: the askings are
// refused in the end, as those whose counts move by the questions' length
// are (TestRewordedPollUsageGrows). A job whose counts grow by more than
// the conversation before it could add still goes on.
func TestRewordedAskHistoryGrows(t *testing.T) {
	qs := []string{
		"Do contractors get the home-office stipend?",
		"Is the home office allowance available to contract workers?",
		"Can a contractor claim the remote work equipment stipend?",
		"Are external contractors eligible for the home-office budget?",
		"Home-office stipend: does it apply to contractors?",
		"Contractors and the home-office stipend, yes or no?",
		"Would a contractor be reimbursed for a home-office desk?",
		"Is the stipend for home offices open to contractors?",
	}
	answer := "Per the 2026 employee handbook, section 7.3, the home-office stipend of 500 EUR a year is available to employees only. " +
		strings.Repeat("Contractors are engaged under their own service agreements and equip their own workplaces; they are not eligible for it. ", 4)
	w := asRunOf("ask_agent", "research", false)
	in, reply := 420, len(answer)/4
	for _, q := range qs {
		w.t("", asOK("ask_agent", obj{"agent": "hr", "contextId": "ctx-7f3a", "message": q},
			obj{"answer": answer, "usage": obj{"input_tokens": in, "output_tokens": reply, "total_tokens": in + reply}}))
		in += len(q)/4 + reply + 12 // the conversation read again: the last question and answer
	}
	if p := playAs(w.run); p.refusedAt < 0 {
		t.Errorf("one question reworded to an agent that keeps its conversation, answered the same: not refused in %d calls", p.calls)
	}
}
