package loops

import "testing"

// The fixes the ninth probe asked for, each with a near-miss it must not
// refuse.

// A planner rewords one brief and its researcher asks the same question
// back each time, doing nothing: the third round is refused. Rewordings
// whose verdicts are the same acknowledgement ("Done."), or whose
// question changes, go on.
func TestAskedBackRounds(t *testing.T) {
	ask := "Which environment: production or staging? I have no host list."
	run := func(id string, verdicts ...string) asPlay {
		w := asRunOf(id, "multi-agent", false)
		tasks := []string{"Find our PgBouncer version.", "Check which PgBouncer version we run.", "What version of PgBouncer is deployed?", "Report the PgBouncer version in production."}
		for i, v := range verdicts {
			w.hand("", "researcher", tasks[i], v, nil)
		}
		return playAs(w.run)
	}
	if p := run("asked-back", ask, ask, ask, ask); p.refusedAt != 2 || p.v.Detector != "delegation" {
		t.Errorf("the same question asked back: refused at %d (%v), want the third hand-off", p.refusedAt, p.v)
	}
	if p := run("done", "Done.", "Done.", "Done.", "Done."); p.refusedAt >= 0 {
		t.Errorf("the same acknowledgement: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("other-questions", ask, "Production has two proxies: which one?", "Is db-proxy-2 in scope too?", "PgBouncer 1.18.0 on db-proxy-1."); p.refusedAt >= 0 {
		t.Errorf("other questions each time: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("url-query", "See https://docs.example.com/pgb?v=1 for it.", "See https://docs.example.com/pgb?v=1 for it.", "See https://docs.example.com/pgb?v=1 for it."); p.refusedAt >= 0 {
		t.Errorf("a verdict with a URL's query, no question: refused at %d: %v", p.refusedAt, p.v)
	}
}
