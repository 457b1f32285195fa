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
	} else if strings.Contains(p.v.Suggestion, "rejection") {
		t.Errorf("the suggestion for an account that rejected nothing speaks of a rejection: %q", p.v.Suggestion)
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

// A form filled and submitted round after round under the refs each
// snapshot gives its elements, the page the same but for its refs, is one
// cycle of writes made again: the fourth round is refused. A form whose
// page moves (another field asked for each time), and one typed with
// another person's name each round, go on.
func TestCycleUnderRenumberedRefs(t *testing.T) {
	run := func(id string, text func(r int) string, alert func(r int) string) asPlay {
		w := asRunOf(id, "browser", false).acc("write", "browser_type", "browser_click")
		for r := 0; r < 5; r++ {
			b := 40 + r*12
			w.t("", asOK("browser_type", obj{"element": "Full name textbox", "ref": fmt.Sprintf("e%d", b), "text": text(r)}, "- Ran Playwright code:\n```js\nawait page.fill('Full name');\n```"))
			w.t("", asOK("browser_click", obj{"element": "Place order button", "ref": fmt.Sprintf("e%d", b+5)}, s17Snap("https://shop.example/checkout", "Checkout",
				fmt.Sprintf("- textbox \"Phone\" [ref=e%d]", b+13), "- alert: "+alert(r), fmt.Sprintf("- button \"Place order\" [ref=e%d]", b+17))))
		}
		return playAs(w.run)
	}
	same := func(int) string { return "Ana Lopez" }
	phone := func(int) string { return "Phone number is required." }
	p := run("same", same, phone)
	if p.refusedAt != 6 || p.v.Detector != "short_cycle" {
		t.Fatalf("the same form under renumbered refs: refused at %d (%v), want the fourth round's first call (6)", p.refusedAt, p.v)
	}
	if want := "renumbered ref"; !strings.Contains(p.v.Message, want) {
		t.Errorf("message %q does not say %q", p.v.Message, want)
	}
	moves := func(r int) string {
		return []string{"Phone number is required.", "Enter a valid postcode.", "Choose a delivery slot.", "Accept the terms.", "Card declined."}[r]
	}
	if p := run("page-moves", same, moves); p.refusedAt >= 0 {
		t.Errorf("another field asked for each round: refused at %d: %v", p.refusedAt, p.v)
	}
	names := func(r int) string { return []string{"Ana Lopez", "Tom Berg", "Mia Chen", "Omar Haddad", "Lea Roth"}[r] }
	if p := run("other-values", names, phone); p.refusedAt >= 0 {
		t.Errorf("another value typed each round: refused at %d: %v", p.refusedAt, p.v)
	}
}
