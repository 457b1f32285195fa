package loops

import "testing"

// TestRewordedPollUsageGrows: a job asked about in words, reworded each
// time ("Any progress on the report?", "How far along is it?"), whose
// reply stays "still working" while its token counts grow by far more
// than a rewording moves a prompt's count: the counts are the job's, its
// one sign that it moves, not the exchange's. Eight such askings go on,
// with a wait between or none. The same askings whose counts move only as
// much as the questions' lengths do (the exchange's) are refused in the
// end, as TestModelReplyUsage's are.
func TestRewordedPollUsageGrows(t *testing.T) {
	qs := []string{
		"Any progress on the report so far?",
		"How far along is the report now?",
		"Is the report done yet?",
		"What's the status of my report?",
		"Still working on the report?",
		"Update on the report, please.",
		"How is the report coming along?",
		"Is my report ready?",
	}
	poll := func(grow, wait bool) asPlay {
		w := asRunOf("ask_agent", "research", false)
		for i, q := range qs {
			in, out := 30+len(q)/4, 12
			if grow {
				in, out = 1800+950*i, 120+310*i
			}
			w.t("", asOK("ask_agent", obj{"agent": "researcher", "message": q}, obj{"status": "Still working on your report, nearly there.", "usage": obj{"input_tokens": in, "output_tokens": out}}))
			if wait {
				w.t("", asOK("wait", obj{"seconds": 30 + 15*i}, "Waited."))
			}
		}
		return playAs(w.run)
	}
	for _, wait := range []bool{false, true} {
		if p := poll(true, wait); p.refusedAt >= 0 {
			t.Errorf("a job asked about reworded while its token counts grow (wait %v): refused at %d: %v", wait, p.refusedAt, p.v)
		}
		if p := poll(false, wait); p.refusedAt < 0 {
			t.Errorf("a job asked about reworded, the counts the exchange's (wait %v): not refused in %d calls", wait, p.calls)
		}
	}
}

// TestFedBackRounds: a writer hands its draft to an editor to shorten,
// then hands the editor's result back to be shortened again. The first
// round made the result the second one is handed: the two ending alike
// (the editor giving the text back unchanged) is one round that made
// nothing, not two, and the next hand-off is the same task's second. The
// rounds that take the unchanged text again end alike and are refused: the
// same task a third time, or reworded around it.
func TestFedBackRounds(t *testing.T) {
	const (
		s0 = "The December release adds webhook retries with exponential backoff, an audit-log export in CSV and JSON, and fixes the SSO logout loop."
		s1 = "December release: webhook retries with backoff, audit-log export (CSV/JSON), SSO logout fix."
	)
	round := func(task string) op { return by("writer", verdictOf(hand("editor", task), s1)) }
	runCases(t, []testCase{
		{"a draft shortened, then handed back", nil, []op{
			round("Shorten this summary to under 15 words: " + s0),
			round("Shorten this summary to under 15 words: " + s1),
			round("Shorten this summary to under 15 words: " + s1),
			refused(by("writer", hand("editor", "Shorten this summary to under 15 words: "+s1)), "delegation"),
		}},
		{"handed back, reworded around the unchanged text", nil, []op{
			round("Shorten this summary to under 15 words: " + s0),
			round("Shorten this summary to under 15 words: " + s1),
			round("Make this summary shorter, under 15 words: " + s1),
			refused(by("writer", hand("editor", "Trim this summary below 15 words: "+s1)), "delegation"),
		}},
	})
}
