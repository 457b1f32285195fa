package loops

import (
	"fmt"
	"strings"
	"testing"
)

// The same account word for word, handed back for each rewording of one
// task, ends its rounds as the same rejection does: the third hand-off is
// refused. An account that changes, a short acknowledgement said again
// ("Done."), and the same account after another agent wrote something go
// on.
func TestSameAccountRounds(t *testing.T) {
	tasks := []string{
		"Find evidence on whether free shipping thresholds raise average order value.",
		"Look for studies showing free-shipping thresholds increase AOV.",
		"Does a free shipping threshold lift average order value? Find sources.",
		"Research the effect of free shipping minimums on basket size.",
	}
	const account = "Sources: the Baymard checkout study; Lewis on shipping fees and order size; a Shopify post on thresholds. None measures our category."
	run := func(id string, verdict func(i int) string, write bool) asPlay {
		w := asRunOf(id, "a2a", false).acc("write", "save_note")
		for i, task := range tasks {
			w.hand("", "researcher", task, verdict(i), nil)
			if write {
				w.hand("", "editor", fmt.Sprintf("Note source %d.", i), "Noted.", func(s *asw) {
					s.t("", asOK("save_note", obj{"text": fmt.Sprintf("source %d", i)}, "saved"))
				})
			}
		}
		return playAs(w.run)
	}
	if p := run("same", func(int) string { return account }, false); p.refusedAt != 2 || p.v.Detector != "delegation" {
		t.Errorf("the same account for each rewording: refused at %d (%v), want the third hand-off", p.refusedAt, p.v)
	} else if want := "ended in the same verdict"; !strings.Contains(p.v.Message, want) {
		t.Errorf("message %q does not say %q", p.v.Message, want)
	}
	other := func(i int) string {
		return []string{account, "Sources: two A/B tests from Baymard, both on apparel; AOV rose 7% and 9% above the threshold.", "Sources: a 2019 NBER paper finds thresholds shift baskets toward the threshold, not beyond it.", "No further sources found beyond those."}[i]
	}
	if p := run("other", other, false); p.refusedAt >= 0 {
		t.Errorf("other accounts each time: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("done", func(int) string { return "Done, all good." }, false); p.refusedAt >= 0 {
		t.Errorf("a short acknowledgement: refused at %d: %v", p.refusedAt, p.v)
	}
	if p := run("written", func(int) string { return account }, true); p.refusedAt >= 0 {
		t.Errorf("the same account after another agent's write each time: refused at %d: %v", p.refusedAt, p.v)
	}
}
