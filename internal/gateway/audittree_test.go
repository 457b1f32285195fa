package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// TestAuditTreeAPI: GET /v1/audit?request=ID&tree=1 gives the request's
// events and its sub-requests' (a hand-off, and the hand-off's own), in
// seq order, each naming its request, a page at a time (limit, and the
// cursor "next" sent back as after); its principal sees them, another
// principal nothing, an operator all. The UI's audit page shows the same.
func TestAuditTreeAPI(t *testing.T) {
	g, url, _, keys := authGateway(t, "")
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	ctx, root, err := g.rt.Begin(t.Context(), &reach.RequestOptions{ID: "bob-tree", Principal: "bob", Roles: []string{"reviewer"}})
	if err != nil {
		t.Fatal(err)
	}
	search := func(ctx context.Context, id string) {
		t.Helper()
		if res := g.rt.Call(ctx, &reach.Call{ID: id, Tool: "search_kb", Arguments: []byte(`{"query":"` + id + `"}`)}); res.Error != nil {
			t.Fatalf("call %s: %v", id, res.Error)
		}
	}
	search(ctx, "c-root")
	cctx, child, err := g.rt.Delegate(ctx, &reach.Delegation{Agent: "planner", Task: "plan the refund"})
	if err != nil {
		t.Fatal(err)
	}
	search(cctx, "c-child")
	gctx, grandchild, err := g.rt.Delegate(cctx, &reach.Delegation{Agent: "executor", Task: "look it up"})
	if err != nil {
		t.Fatal(err)
	}
	search(gctx, "c-grandchild")
	grandchild.End()
	child.End()
	search(ctx, "c-root-after")
	root.End()
	g.audit.Flush(t.Context())

	type ev struct {
		seq     float64
		request string
		name    string
	}
	page := func(who, query string) ([]ev, any) {
		t.Helper()
		status, out := do(t, "GET", url+"/v1/audit?request=bob-tree"+query, "", as(who))
		if status != 200 {
			t.Fatalf("%s: GET /v1/audit?request=bob-tree%s = %d %v", who, query, status, out)
		}
		var evs []ev
		for _, e := range out["events"].([]any) {
			evs = append(evs, ev{path(e, "seq").(float64), fmt.Sprint(path(e, "request")), fmt.Sprint(path(e, "event", "name"))})
		}
		return evs, out["next"]
	}
	all, next := page("bob", "&tree=1&limit=1000")
	if next != nil {
		t.Errorf("one page of all: next = %v, want none", next)
	}
	calls := map[string]string{}
	for i, e := range all {
		if i > 0 && e.seq <= all[i-1].seq {
			t.Errorf("event %d (seq %v) after seq %v: want seq order", i, e.seq, all[i-1].seq)
		}
		if e.name == "search_kb" {
			calls[e.request] += "x"
		}
	}
	if calls[root.ID()] == "" || calls[child.ID()] == "" || calls[grandchild.ID()] == "" {
		t.Fatalf("the tree's calls by request: %v; want the root's, the hand-off's and its hand-off's: %v", calls, all)
	}
	single, _ := page("bob", "&tree=0")
	for _, e := range single {
		if e.request != root.ID() {
			t.Errorf("without tree=1, an event of %s", e.request)
		}
	}
	// Pages of 2 give the same events, in the same order, and end.
	var paged []ev
	after := ""
	for range len(all) {
		evs, next := page("bob", "&tree=1&limit=2"+after)
		paged = append(paged, evs...)
		if next == nil {
			break
		}
		after = fmt.Sprintf("&after=%.0f", next.(float64))
	}
	if fmt.Sprint(paged) != fmt.Sprint(all) {
		t.Errorf("pages of 2: %v\nwant %v", paged, all)
	}
	if got, _ := page("alice", "&tree=1"); len(got) != 0 {
		t.Errorf("alice sees %d events of bob's tree", len(got))
	}
	if got, _ := page("dave", "&tree=1&limit=1000"); fmt.Sprint(got) != fmt.Sprint(all) {
		t.Errorf("the operator sees %v, want %v", got, all)
	}
	// &before=SEQ keeps a request's page to its events before SEQ (the
	// cursor of a full page, or of one that read its bound of events
	// without filling).
	if len(single) < 2 {
		t.Fatalf("the root's page: %v", single)
	}
	if older, _ := page("bob", fmt.Sprintf("&before=%.0f", single[len(single)-1].seq)); fmt.Sprint(older) != fmt.Sprint(single[:len(single)-1]) {
		t.Errorf("the root's events before its last: %v, want %v", older, single[:len(single)-1])
	}
	for _, q := range []string{"?tree=1", "?request=bob-tree&tree=yes", "?request=bob-tree&after=3", "?request=bob-tree&tree=1&after=x",
		"?request=bob-tree&tree=1&before=3", "?before=x", "?request=bob-tree&before=0"} {
		if status, _ := do(t, "GET", url+"/v1/audit"+q, "", as("bob")); status != 400 {
			t.Errorf("GET /v1/audit%s = %d, want 400", q, status)
		}
	}
	_, html := rawAs(t, keys["bob"], "GET", url+"/ui/audit?request=bob-tree&tree=1", "")
	if !strings.Contains(html, grandchild.ID()) || !strings.Contains(html, child.ID()) {
		t.Errorf("the UI's audit page with tree=1 lacks the sub-requests' events")
	}
}
