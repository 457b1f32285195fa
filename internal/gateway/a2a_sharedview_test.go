package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A hand-off begun on instance b, in a root whose other hand-offs spent
// most of its budget on instance a, shows in GET /v1/requests/{id} and the
// UI's request page on b what the shared store holds: what it spent on
// every instance, and what is left of it within what is left of the root
// (6 tool calls, 5 spent), where it showed what b's view of the root's
// spend left it (3 of a carve of 4).
func TestInstancesHandoffShowsTheSharedSpend(t *testing.T) {
	ag, bases, gs := spendInstances(t)
	ag.tools = bases[:1]
	ag.reach = bases[0]
	if _, err := ag.send(t.Context(), "spend 3", "shown-across", ""); err != nil {
		t.Fatal(err)
	}
	// b's hand-off: its calls go to b; b joined the root when a had spent 3.
	ag.tools = bases[1:]
	ag.reach = bases[1]
	if _, err := ag.send(t.Context(), "spend 1", "shown-across", ""); err != nil {
		t.Fatal(err)
	}
	var sub string
	for _, r := range gs[1].rt.Requests() {
		if p := r.Parent(); p != nil && p.ID() == "shown-across" {
			sub = r.ID()
		}
	}
	// a spends 1 more in the root, through a's first hand-off's agent: the
	// root has 6 - 3 - 1 - 1 = 1 left.
	ag.tools = bases[:1]
	ag.reach = bases[0]
	if _, err := ag.send(t.Context(), "spend 1", "shown-across", ""); err != nil {
		t.Fatal(err)
	}
	if n := ag.made.Load(); n != 5 {
		t.Fatalf("%d tool calls made, want 5", n)
	}
	_, view := do(t, "GET", bases[1]+"/v1/requests/"+sub, "", nil)
	t.Logf("b's view of its hand-off %s: budget %v, used %v, left %v", sub, view["budget"], view["used"], view["left"])
	if path(view, "used", "tool_calls") != 1.0 || path(view, "left", "tool_calls") != 1.0 || view["shared"] != true {
		t.Errorf("b's view of its hand-off: used %v, left %v, shared %v; want 1 used, 1 left (the root's last call)",
			path(view, "used", "tool_calls"), path(view, "left", "tool_calls"), view["shared"])
	}
	// The UI's request page: 1 tool call of the 2 it may make in all (its
	// 1 and the root's last), not of its budget of 4.
	resp, err := http.Get(bases[1] + "/ui/requests/" + sub)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `title="1 of 2"`) || !strings.Contains(string(page), "on every instance") {
		t.Errorf("b's request page of its hand-off lacks its shared tool calls, 1 of 2:\n%s", page)
	}
}
