package loops

import (
	"fmt"
	"testing"
)

// Legitimate runs near the ninth probe's rules (review16b): none should be
// refused. Those the detector refuses today are skipped with what refuses
// them, for internal/loops's owner to decide (remove the skip to see it).

// A "Load more" button whose items arrive after a delay: each click's
// snapshot still shows the page before it, the agent waits, and a
// snapshot then shows the new items.
func TestReviewDelayedLoadMore(t *testing.T) {
	const u = "https://shop.example.com/search?q=boots"
	w := asRunOf("delayed-load-more", "browser", false).acc("write", "browser_click")
	ref := 4
	items := []string{"link \"Alto 2\""}
	for i := range 5 {
		w.t("", asOK("browser_click", obj{"element": "Load more button", "ref": fmt.Sprintf("e%d", ref)},
			nnPW("await page.getByRole('button', { name: 'Load more' }).click();", u, "boots", ref+1, append(items, "button \"Load more\"")...)))
		w.t("", asOK("browser_wait_for", obj{"time": 2}, "Waited for 2"))
		items = append(items, fmt.Sprintf("link \"Boot %d\"", i))
		ref += 4
		w.t("", asOK("browser_snapshot", obj{}, svSnap(u, "boots", ref, append(items, "button \"Load more\"")...)))
	}
	if p := playAs(w.run); p.refusedAt >= 0 {
		t.Errorf("load more, items arriving after a wait: refused at %d: %v", p.refusedAt, p.v)
	}
}

// A quantity stepper clicked four times in a row: the cart's total is
// updated after a debounce, so each click's snapshot shows the quantity
// before it; the last snapshot shows 5.
func TestReviewDebouncedStepper(t *testing.T) {
	t.Skip("refused at the fourth click (short_cycle, checkWriteRespelled: the ref no longer tells the clicks apart); new in loops16")
	const u = "https://shop.example.com/cart"
	w := asRunOf("debounced-stepper", "browser", false).acc("write", "browser_click")
	for i := range 4 {
		ref := 10 + 3*i
		w.t("", asOK("browser_click", obj{"element": "Increase quantity button", "ref": fmt.Sprintf("e%d", ref)},
			nnPW("await page.getByRole('button', { name: '+' }).click();", u, "Cart", ref+1, "text \"Alto 2 boots\"", "spinbutton \"Quantity\": 1", "button \"+\"")))
	}
	w.t("", asOK("browser_snapshot", obj{}, svSnap(u, "Cart", 30, "text \"Alto 2 boots\"", "spinbutton \"Quantity\": 5", "button \"+\"")))
	if p := playAs(w.run); p.refusedAt >= 0 {
		t.Errorf("a debounced stepper clicked four times: refused at %d: %v", p.refusedAt, p.v)
	}
}

// A planner hands its researcher three different tasks about one
// service; each needs the environment, which the planner does not know,
// and the researcher asks for it each time in the same words.
func TestReviewSameQuestionOtherTasks(t *testing.T) {
	ask := "Which environment: production or staging? I have no host list."
	w := asRunOf("same-question-other-tasks", "multi-agent", false)
	for _, task := range []string{"Find our PgBouncer version.", "List the databases PgBouncer pools.", "Report PgBouncer's max_client_conn.", "Check PgBouncer's auth_type."} {
		w.hand("", "researcher", task, ask, nil)
	}
	if p := playAs(w.run); p.refusedAt >= 0 {
		t.Errorf("the same question for other tasks: refused at %d: %v", p.refusedAt, p.v)
	}
}

// One config file read, changed by a command (not an edit tool), and
// read again under another spelling, three times: each read finds what
// the command wrote.
func TestReviewReadAfterCommand(t *testing.T) {
	w := asRunOf("read-after-command", "filesystem", false).acc("write", "run_command")
	paths := []string{"config/app.yaml", "./config/app.yaml", "/srv/app/config/app.yaml", "config//app.yaml"}
	for i, p := range paths {
		w.t("", asOK("read_text_file", obj{"path": p}, fmt.Sprintf("queue:\n  workers: %d\n", 4+i)))
		w.t("", asOK("run_command", obj{"command": fmt.Sprintf("sed -i 's/workers: %d/workers: %d/' config/app.yaml", 4+i, 5+i)}, ""))
	}
	if p := playAs(w.run); p.refusedAt >= 0 {
		t.Errorf("one file read after each command changed it: refused at %d: %v", p.refusedAt, p.v)
	}
}
