package loops

import "testing"

// TestPollUsageNews: a job polled by its id whose status text stays the
// same while its token counts grow ({"status": "... still working ...",
// "usage": {"input_tokens": N, "output_tokens": M}}) is moving: the counts
// are the only sign of it, and no model was asked in words (the poll
// names a job), so they are its answer, not a model's exchange
// (TestModelReplyUsage). Eight such polls go on, with a wait between them
// or none; the same poll whose counts stand still is refused in the end.
func TestPollUsageNews(t *testing.T) {
	poll := func(id string, grow, wait bool) asPlay {
		w := asRunOf(id, "research", false)
		for i := 0; i < 8; i++ {
			n := 0
			if grow {
				n = i
			}
			w.t("", asOK("check_research_job", obj{"job": "j-41"}, obj{"status": "The research agent is still working on your report.", "usage": obj{"input_tokens": 1800 + 950*n, "output_tokens": 120 + 310*n}}))
			if wait {
				w.t("", asOK("wait", obj{"seconds": 30}, "Waited 30 seconds."))
			}
		}
		return playAs(w.run)
	}
	for _, wait := range []bool{false, true} {
		if p := poll("grows", true, wait); p.refusedAt >= 0 {
			t.Errorf("a job polled while its token counts grow (wait %v): refused at %d: %v", wait, p.refusedAt, p.v)
		}
		if p := poll("stands", false, wait); p.refusedAt < 0 {
			t.Errorf("a job polled while its token counts stand still (wait %v): not refused in %d calls", wait, p.calls)
		}
	}
}
