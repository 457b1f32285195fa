package loops

import "testing"

// TestToldBefore: a question in words asked again, reworded, whose
// answers say in words that they were given already ("I already told
// you", "Again, ...") is refused at the fourth asking; questions whose
// answers say nothing of the kind, or that are other questions, go on.
func TestToldBefore(t *testing.T) {
	run := func(id string, qa [][2]string) asPlay {
		w := asRunOf(id, "human", false)
		for _, x := range qa {
			w.t("", asOK("ask_human", obj{"question": x[0]}, x[1]))
		}
		return playAs(w.run)
	}
	told := [][2]string{
		{"Which date should the team offsite start on?", "The 14th of March"},
		{"Could you confirm the start date of the team offsite?", "I already told you: the 14th."},
		{"When exactly does the offsite begin?", "Again, the 14th of March."},
		{"What day is the offsite's first day?", "As I said, the 14th."},
		{"Just to check, the offsite starts when?", "The 14th!"},
	}
	if p := run("told", told); p.refusedAt != 3 || p.v.Detector != "rephrase" {
		t.Errorf("one question reworded, the answers saying so: refused at %d (%v), want the fourth asking", p.refusedAt, p.v)
	}
	plain := [][2]string{
		{"Which date should the team offsite start on?", "The 14th of March"},
		{"Which city should the team offsite be in?", "Lisbon"},
		{"How many nights should the team offsite last?", "Three nights"},
		{"Which hotel area do you prefer for the offsite?", "Near the river"},
		{"Should I book the offsite's flights too?", "Yes please"},
	}
	if p := run("plain", plain); p.refusedAt >= 0 {
		t.Errorf("other questions on one subject: refused at %d: %v", p.refusedAt, p.v)
	}
	retry := [][2]string{
		{"Which date should the team offsite start on?", "Try again, I was away"},
		{"Could you confirm the offsite's start date?", "Not sure yet, ask me again tomorrow"},
		{"Did you settle the offsite's start date?", "The 14th of March"},
		{"Which city should the offsite be in?", "Lisbon"},
	}
	if p := run("retry", retry); p.refusedAt >= 0 {
		t.Errorf("a question asked again after an answer that gave none: refused at %d: %v", p.refusedAt, p.v)
	}
	for _, c := range []struct {
		res  string
		want bool
	}{
		{`"I already told you: about 150 euros."`, true},
		{`"Again, 150 euros a night."`, true},
		{`"I've said it three times: 150."`, true},
		{`"150. Please stop asking."`, true},
		{`"Please try again later."`, false},
		{`"Around 150 euros"`, false},
		{`{"text":"I already told you"}`, true}, // one text member: its text (TestToldInOneMember)
	} {
		if got := saysToldBefore([]byte(c.res)); got != c.want {
			t.Errorf("saysToldBefore(%s) = %v, want %v", c.res, got, c.want)
		}
	}
}

// BenchmarkSaysToldBefore: the look at a short answer to a question in
// words, for what it says of being given before.
func BenchmarkSaysToldBefore(b *testing.B) {
	res := []byte(`"The offsite starts on the 14th of March, in Lisbon, for three nights near the river."`)
	for b.Loop() {
		if saysToldBefore(res) {
			b.Fatal("told")
		}
	}
}

// TestNeedIsRejection: a verdict that says what the receiver needs
// first ("I need the logs first; handing back") reads as a rejection, as
// one that says what the work "needs" does: the same need, reworded,
// ending two rounds of one task reworded, refuses the third. Needs that
// move (another thing needed each round) are progress.
func TestNeedIsRejection(t *testing.T) {
	if !rejection("I need the access logs first; handing back to triage.") {
		t.Error(`"I need the access logs first; ...": not a rejection`)
	}
	run := func(id string, rounds [][2]string) asPlay {
		w := asRunOf(id, "delegation", false)
		for i, r := range rounds {
			to := "triage"
			if i%2 == 1 {
				to = "fixer"
			}
			w.hand("", to, r[0], r[1], nil)
		}
		return playAs(w.run)
	}
	same := [][2]string{
		{"Triage the checkout 502s from last night.", "The fixer should patch the proxy timeout; handing over."},
		{"Patch the checkout proxy timeout behind last night's 502s.", "I need the access logs first; handing back to triage."},
		{"Look into last night's checkout 502s again.", "The fixer should patch the proxy timeout; handing over."},
		{"Fix the proxy timeout behind the checkout 502s.", "Need the access logs from triage; handing back."},
		{"Triage the checkout 502s, last night's.", "Handing to the fixer for the timeout."},
	}
	if p := run("same-need", same); p.refusedAt != 4 || p.v.Detector != "delegation" {
		t.Errorf("the same need reworded, two rounds: refused at %d (%v), want the fifth hand-off", p.refusedAt, p.v)
	}
	moving := [][2]string{
		{"Triage the checkout 502s from last night.", "The fixer should patch the proxy timeout; handing over."},
		{"Patch the checkout proxy timeout behind last night's 502s.", "I need the access logs first; handing back to triage."},
		{"Look into last night's checkout 502s again.", "Logs attached; the fixer should patch the proxy timeout."},
		{"Fix the proxy timeout behind the checkout 502s.", "I need a staging slot to test on; anything free today?"},
		{"Triage the checkout 502s, last night's.", "Staging slot 3 booked; handing to the fixer."},
	}
	if p := run("moving-need", moving); p.refusedAt >= 0 {
		t.Errorf("another need each round: refused at %d: %v", p.refusedAt, p.v)
	}
}
