package loops

import "testing"

// TestPollUsageNews: a job polled whose status text stays the same while
// its token counts grow ({"status": "... still working ...", "usage":
// {"input_tokens": N, "output_tokens": M}}) is moving: the counts are the
// only sign of it. Polled by its id (no model asked in words) or by a
// question in words asked the same each time, the counts are its answer,
// not a model's exchange: only a question reworded compares replies
// without them (TestModelReplyUsage). Eight such polls go on, with a wait
// between them or none; the same polls whose counts stand still are
// refused in the end.
func TestPollUsageNews(t *testing.T) {
	polls := []struct {
		name, tool string
		args       obj
		text       string
	}{
		{"by its id", "check_research_job", obj{"job": "j-41"}, "The research agent is still working on your report."},
		{"in words", "ask_agent", obj{"agent": "researcher", "message": "Any progress on the report so far?"}, "Still working on your report, nearly there."},
	}
	for _, c := range polls {
		poll := func(grow, wait bool) asPlay {
			w := asRunOf(c.tool, "research", false)
			for i := 0; i < 8; i++ {
				n := 0
				if grow {
					n = i
				}
				w.t("", asOK(c.tool, c.args, obj{"status": c.text, "usage": obj{"input_tokens": 1800 + 950*n, "output_tokens": 120 + 310*n}}))
				if wait {
					w.t("", asOK("wait", obj{"seconds": 30}, "Waited 30 seconds."))
				}
			}
			return playAs(w.run)
		}
		for _, wait := range []bool{false, true} {
			if p := poll(true, wait); p.refusedAt >= 0 {
				t.Errorf("a job polled %s while its token counts grow (wait %v): refused at %d: %v", c.name, wait, p.refusedAt, p.v)
			}
			if p := poll(false, wait); p.refusedAt < 0 {
				t.Errorf("a job polled %s while its token counts stand still (wait %v): not refused in %d calls", c.name, wait, p.calls)
			}
		}
	}
}
