package loops

import "testing"

// TestQuotedSaidIsNotTold: short answers that report what someone said
// ("Dana said that ...") say nothing of the question having been answered
// before; other questions on one subject, each answered so, go on.
func TestQuotedSaidIsNotTold(t *testing.T) {
	w := asRunOf("quoted", "notes", false)
	for _, x := range [][2]string{
		{"What did Dana say about the launch date in the meeting notes?", "Dana said that the launch moves to Friday."},
		{"What did Lee say about the launch budget in the meeting notes?", "Lee said that the launch budget is approved."},
		{"What did Sam say about launch QA in the meeting notes?", "Sam said that QA signed the launch off."},
		{"What did Kim say about the launch press release in the meeting notes?", "Kim said that the press release is drafted."},
		{"What did Ravi say about launch support staffing in the meeting notes?", "Ravi said that two more people join support."},
	} {
		w.t("", asOK("search_notes", obj{"query": x[0]}, x[1]))
	}
	if p := playAs(w.run); p.refusedAt >= 0 {
		t.Errorf("other questions on one subject, each answer quoting someone: refused at %d: %v", p.refusedAt, p.v)
	}
}

// TestSaidBySpeaker: "said it" and "said that" say an answer was given
// before only when the one answering said it.
func TestSaidBySpeaker(t *testing.T) {
	for _, c := range []struct {
		res  string
		want bool
	}{
		{`"Dana said that the launch moves to Friday."`, false},
		{`"He said it was fine to ship."`, false},
		{`"Dani said that QA is done."`, false},
		{`"The memo said items ship Monday."`, false},
		{`"I said that already: 150."`, true},
		{`"We've said it before: no."`, true},
		{`"I have said it twice, the 14th."`, true},
		{`"I've said it three times: 150."`, true},
		{`"Lee told you the budget was approved."`, false},
		{`"The runbook told you to restart it first."`, false},
		{`"As I told you, the office closes at 6."`, true},
		{`"I've told you twice: no."`, true},
		{`"We told you on Monday: the 14th."`, true},
	} {
		if got := saysToldBefore([]byte(c.res)); got != c.want {
			t.Errorf("saysToldBefore(%s) = %v, want %v", c.res, got, c.want)
		}
	}
}
