package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentreach/reach/internal/audit"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
)

// tenantOpsGateway serves a gateway with keys for alice of tenants acme
// and globex, ops@acme (the role operator in tenant acme) and root (the
// role operator, no tenant), where each alice has made a trip whose undo
// failed: requests acme-trip and globex-trip, each with an open dead
// letter.
func tenantOpsGateway(t *testing.T) (g *Gateway, srvURL string, keys map[string]string) {
	t.Helper()
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(pol, []byte(`permit (principal, action == Reach::Action::"call", resource);`), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys = map[string]string{}
	for name, spec := range map[string]auth.KeySpec{
		"alice@acme":   {Principal: "alice", Tenant: "acme"},
		"alice@globex": {Principal: "alice", Tenant: "globex"},
		"ops@acme":     {Principal: "ops", Tenant: "acme", Roles: []string{"operator"}},
		"root":         {Principal: "root", Roles: []string{"operator"}},
	} {
		if keys[name], _, err = ks.Create(spec); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte("data: "+dir+"\nauth: {keys: true}\npolicy: {path: "+pol+"}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g = newTestGateway(t, cfg)
	echoArgs := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }
	g.rt.MustRegister(
		reach.Tool{Name: "reserve", Access: reach.Write, Func: echoArgs, Undo: &reach.Followup{Tool: "release", Args: `{"seat": "{args.seat}"}`}},
		reach.Tool{Name: "release", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &reach.ToolError{Type: "conflict", Message: "the seat map is locked"}
		}},
		reach.Tool{Name: "charge", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &reach.ToolError{Type: "conflict", Message: "card declined"}
		}},
	)
	srvURL = serveTest(t, g).URL
	for who, id := range map[string]string{"alice@acme": "acme-trip", "alice@globex": "globex-trip"} {
		for _, call := range []string{`{"call_id":"c1","tool":"reserve","arguments":{"seat":"4A"}}`, `{"call_id":"c2","tool":"charge","arguments":{"seat":"4A"}}`} {
			if status, out := do(t, "POST", srvURL+"/v1/calls", `{"request_id":"`+id+`","tool_calls":[`+call+`]}`, map[string]string{"Authorization": "Bearer " + keys[who]}); status != 200 {
				t.Fatalf("%s's call = %d %v", who, status, out)
			}
		}
	}
	dls := openDeadLetters(t, g)
	if len(dls) != 2 {
		t.Fatalf("open dead letters = %+v, want one of each trip", dls)
	}
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	return g, srvURL, keys
}

// TestTenantOperatorAPI: an operator of tenant acme lists, reads, draws,
// stops and ends acme's requests and not globex's, reads acme's audit
// events only (a recent page, a request's, a tree's), lists, retries and
// dismisses acme's dead letters only, and is refused the metrics, which
// count every tenant's calls; an operator of no tenant
// still sees and does all of it. Before, the role operator in tenant acme
// read and stopped globex's requests too.
func TestTenantOperatorAPI(t *testing.T) {
	g, srvURL, keys := tenantOpsGateway(t)
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	listed := func(who string) map[string]bool {
		t.Helper()
		status, out := do(t, "GET", srvURL+"/v1/requests", "", as(who))
		if status != 200 {
			t.Fatalf("%s: GET /v1/requests = %d %v", who, status, out)
		}
		seen := map[string]bool{}
		for _, r := range out["requests"].([]any) {
			seen[fmt.Sprint(path(r, "id"))] = true
		}
		return seen
	}
	if got := listed("ops@acme"); !got["acme-trip"] || got["globex-trip"] {
		t.Errorf("ops@acme lists %v, want acme-trip and not globex-trip", got)
	}
	if got := listed("root"); !got["acme-trip"] || !got["globex-trip"] {
		t.Errorf("root lists %v, want both trips", got)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/requests/globex-trip", ""},
		{"GET", "/v1/requests/globex-trip/graph?format=json", ""},
		{"POST", "/v1/requests/globex-trip/cancel", `{"mode":"cancel","reason":"ops@acme was here"}`},
		{"POST", "/v1/requests/globex-trip/end", ""},
	} {
		if status, body := rawAs(t, keys["ops@acme"], c.method, srvURL+c.path, c.body); status != http.StatusNotFound || strings.Contains(body, "4A") {
			t.Errorf("ops@acme %s %s = %d %s, want 404 (as an id no request has) without globex's arguments", c.method, c.path, status, body)
		}
	}
	if status, out := do(t, "GET", srvURL+"/v1/requests/acme-trip/graph?format=json", "", as("ops@acme")); status != 200 {
		t.Errorf("ops@acme drawing acme-trip = %d %v", status, out)
	}

	// The audit log: a recent page, a request's and a tree's.
	tenants := func(who, query string) map[string]int {
		t.Helper()
		status, out := do(t, "GET", srvURL+"/v1/audit"+query, "", as(who))
		if status != 200 {
			t.Fatalf("%s: GET /v1/audit%s = %d %v", who, query, status, out)
		}
		seen := map[string]int{}
		for _, e := range out["events"].([]any) {
			seen[fmt.Sprint(path(e, "event", "tenant"))+" "+fmt.Sprint(path(e, "request"))]++
		}
		return seen
	}
	got := tenants("ops@acme", "")
	for k := range got {
		if !strings.HasPrefix(k, "acme acme-trip") {
			t.Errorf("ops@acme's audit page has %d events of %s, want acme's only", got[k], k)
		}
	}
	if got["acme acme-trip"] == 0 {
		t.Errorf("ops@acme's audit page = %v, lacks acme-trip's events", got)
	}
	for _, q := range []string{"?request=globex-trip", "?request=globex-trip&tree=1", "?principal=alice"} {
		if got := tenants("ops@acme", q); got["globex globex-trip"] != 0 {
			t.Errorf("ops@acme's audit%s = %v, shows globex's", q, got)
		}
	}
	if got := tenants("ops@acme", "?request=acme-trip&tree=1"); got["acme acme-trip"] == 0 {
		t.Errorf("ops@acme's audit of acme-trip's tree = %v", got)
	}
	if got := tenants("root", ""); got["acme acme-trip"] == 0 || got["globex globex-trip"] == 0 {
		t.Errorf("root's audit page = %v, want both tenants'", got)
	}

	// Dead letters.
	deadOf := func(who string) map[string]string {
		t.Helper()
		status, out := do(t, "GET", srvURL+"/v1/deadletters", "", as(who))
		if status != 200 {
			t.Fatalf("%s: GET /v1/deadletters = %d %v", who, status, out)
		}
		m := map[string]string{}
		for _, d := range out["deadletters"].([]any) {
			m[fmt.Sprint(path(d, "request"))] = fmt.Sprint(path(d, "id"))
		}
		return m
	}
	all := deadOf("root")
	if len(all) != 2 || all["acme-trip"] == "" || all["globex-trip"] == "" {
		t.Fatalf("root's dead letters = %v, want both trips'", all)
	}
	if got := deadOf("ops@acme"); len(got) != 1 || got["acme-trip"] == "" {
		t.Errorf("ops@acme's dead letters = %v, want acme-trip's only", got)
	}
	// Every form of its id that the store's queue takes (dl-<n>, n, with
	// zeroes or a sign) names globex's dead letter: none is acme's.
	n := strings.TrimPrefix(all["globex-trip"], "dl-")
	for _, id := range []string{all["globex-trip"], n, "dl-0" + n, "00" + n, "+" + n, "dl-+" + n} {
		if status, body := rawAs(t, keys["ops@acme"], "POST", srvURL+"/v1/deadletters/"+id+"/retry", ""); status != http.StatusNotFound {
			t.Errorf("ops@acme retrying globex's dead letter as %s = %d %s, want 404", id, status, body)
		}
		if status, body := rawAs(t, keys["ops@acme"], "POST", srvURL+"/v1/deadletters/"+id+"/dismiss", `{"note":"not mine"}`); status != http.StatusNotFound {
			t.Errorf("ops@acme dismissing globex's dead letter as %s = %d %s, want 404", id, status, body)
		}
	}
	// A retry by acme's operator runs in tenant acme: its events are in
	// acme's view (they were of no tenant, in no tenant operator's view).
	if status, out := do(t, "POST", srvURL+"/v1/deadletters/"+all["acme-trip"]+"/retry", "", as("ops@acme")); status != 200 || path(out, "deadletter", "attempts") == nil {
		t.Fatalf("ops@acme retrying acme's dead letter = %d %v", status, out)
	}
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := tenants("ops@acme", "?principal=ops"); len(got) == 0 {
		t.Errorf("ops@acme's audit view has none of its retry's events")
	}
	if status, out := do(t, "POST", srvURL+"/v1/deadletters/"+all["acme-trip"]+"/dismiss", `{"note":"released by hand"}`, as("ops@acme")); status != 200 || path(out, "deadletter", "state") != "resolved" {
		t.Errorf("ops@acme dismissing acme's dead letter = %d %v", status, out)
	}
	if status, out := do(t, "GET", srvURL+"/v1/deadletters", "", as("alice@acme")); status != http.StatusForbidden {
		t.Errorf("alice@acme listing dead letters = %d %v, want 403", status, out)
	}
	if dls := openDeadLetters(t, g); len(dls) != 1 || dls[0].Request != "globex-trip" {
		t.Errorf("open dead letters = %+v, want globex-trip's only", dls)
	}

	// Metrics count every tenant's calls (the statistics of acme's
	// operator count acme's: TestTenantOperatorToolsFigures).
	for _, p := range []string{"/metrics"} {
		if status, body := rawAs(t, keys["ops@acme"], "GET", srvURL+p, ""); status != http.StatusForbidden || !strings.Contains(body, "every tenant") {
			t.Errorf("ops@acme GET %s = %d %.200s, want 403 saying why", p, status, body)
		}
		if status, _ := rawAs(t, keys["root"], "GET", srvURL+p, ""); status != 200 {
			t.Errorf("root GET %s = %d", p, status)
		}
	}

	// Stops: globex's is not ops@acme's; acme's is, and root's is any.
	if status, out := do(t, "POST", srvURL+"/v1/requests/acme-trip/cancel", `{"mode":"cancel","reason":"runaway"}`, as("ops@acme")); status != 200 {
		t.Errorf("ops@acme cancelling acme-trip = %d %v", status, out)
	}
	if _, out := do(t, "GET", srvURL+"/v1/requests/globex-trip", "", as("root")); out["state"] != "running" {
		t.Errorf("globex-trip's state = %v after ops@acme's refused stop, want running", out["state"])
	}
	if status, out := do(t, "POST", srvURL+"/v1/requests/globex-trip/cancel", `{"mode":"cancel","reason":"runaway"}`, as("root")); status != 200 {
		t.Errorf("root cancelling globex-trip = %d %v", status, out)
	}
}

// TestTenantOperatorUI: in the UI an operator of tenant acme lists, opens
// and stops acme's requests, not globex's, and its audit view has acme's
// rows only; root's has both.
func TestTenantOperatorUI(t *testing.T) {
	_, srvURL, keys := tenantOpsGateway(t)
	if _, page := rawAs(t, keys["ops@acme"], "GET", srvURL+"/ui/", ""); !strings.Contains(page, "acme-trip") || strings.Contains(page, "globex-trip") {
		t.Errorf("ops@acme's UI list: acme-trip %v, globex-trip %v; want true, false", strings.Contains(page, "acme-trip"), strings.Contains(page, "globex-trip"))
	}
	if status, page := rawAs(t, keys["ops@acme"], "GET", srvURL+"/ui/requests/globex-trip", ""); status != http.StatusNotFound || strings.Contains(page, "4A") {
		t.Errorf("ops@acme GET /ui/requests/globex-trip = %d, want 404", status)
	}
	if status, _ := rawAs(t, keys["ops@acme"], "GET", srvURL+"/ui/requests/acme-trip", ""); status != 200 {
		t.Errorf("ops@acme GET /ui/requests/acme-trip = %d", status)
	}
	for who, want := range map[string][]string{"ops@acme": {"acme-trip"}, "root": {"acme-trip", "globex-trip"}} {
		for _, q := range []string{"", "?request=globex-trip", "?principal=alice"} {
			_, page := rawAs(t, keys[who], "GET", srvURL+"/ui/audit"+q, "")
			if who == "ops@acme" && strings.Contains(page, ">globex-trip<") {
				t.Errorf("ops@acme's audit view%s shows globex-trip's rows", q)
			}
			if q == "" {
				for _, id := range want {
					if !strings.Contains(page, ">"+id+"<") {
						t.Errorf("%s's audit view lacks %s's rows", who, id)
					}
				}
			}
		}
	}
	postForm(t, keys["ops@acme"], srvURL+"/ui/stop/globex-trip", url.Values{"mode": {"cancel"}, "reason": {"ops@acme was here"}})
	postForm(t, keys["ops@acme"], srvURL+"/ui/stop/acme-trip", url.Values{"mode": {"cancel"}, "reason": {"runaway"}})
	for id, want := range map[string]string{"globex-trip": "running", "acme-trip": "stopped_cancel"} {
		if _, out := do(t, "GET", srvURL+"/v1/requests/"+id, "", map[string]string{"Authorization": "Bearer " + keys["root"]}); out["state"] != want {
			t.Errorf("%s's state after ops@acme's stops in the UI = %v, want %s", id, out["state"], want)
		}
	}
}

// TestTenantOperatorAuditPageFull: a tenant's operator's page of the
// audit log is full while the log holds that many of its tenant's events,
// however many of another tenant's came after them: the store filters by
// tenant in its query. Before, the page read the newest ten times its
// limit and dropped the others', and came back empty here.
func TestTenantOperatorAuditPageFull(t *testing.T) {
	g, srvURL, keys := tenantOpsGateway(t)
	for i := range 30 {
		body := fmt.Sprintf(`{"request_id":"globex-fill-%d","tool_calls":[{"call_id":"c1","tool":"reserve","arguments":{"seat":"%dB"}}]}`, i, i)
		if status, out := do(t, "POST", srvURL+"/v1/calls", body, map[string]string{"Authorization": "Bearer " + keys["alice@globex"]}); status != 200 {
			t.Fatalf("alice@globex's call %d = %d %v", i, status, out)
		}
	}
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"?limit=2", "?limit=1&tool=reserve", "?limit=2&principal=alice"} {
		status, out := do(t, "GET", srvURL+"/v1/audit"+q, "", map[string]string{"Authorization": "Bearer " + keys["ops@acme"]})
		if status != 200 {
			t.Fatalf("ops@acme GET /v1/audit%s = %d %v", q, status, out)
		}
		evs, _ := out["events"].([]any)
		want := 2
		if strings.Contains(q, "limit=1") {
			want = 1
		}
		if len(evs) != want {
			t.Errorf("ops@acme GET /v1/audit%s = %d events, want %d: %v", q, len(evs), want, out)
		}
		for _, e := range evs {
			if path(e, "event", "tenant") != "acme" {
				t.Errorf("ops@acme GET /v1/audit%s has %v", q, e)
			}
			if strings.Contains(q, "tool=") && path(e, "event", "name") != "reserve" {
				t.Errorf("ops@acme GET /v1/audit%s has an event of %v", q, path(e, "event", "name"))
			}
		}
	}
}

// TestTenantOperatorOnInstances: alice@acme's request runs on instance a;
// through instance b, globex's operator cannot stop it (404, as an id the
// store does not know, and it keeps running), and acme's operator stops
// it, on a.
func TestTenantOperatorOnInstances(t *testing.T) {
	a, b, _, keys := tenantInstances(t)
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	if st, out := do(t, "POST", a+"/v1/calls", `{"request_id":"rx","tool_calls":[{"call_id":"c1","tool":"up__echo","arguments":{"text":"hi"}}]}`, as("alice")); st != 200 || path(out, "results", 0, "status") != "success" {
		t.Fatalf("alice on a: %d %v", st, out)
	}
	if st, out := do(t, "POST", b+"/v1/requests/rx/cancel", `{"mode":"cancel","reason":"globex's operator"}`, as("ops@globex")); st != 404 || !strings.Contains(fmt.Sprint(out), "unknown_request") {
		t.Fatalf("ops@globex stopping rx through b = %d %v, want 404 unknown_request", st, out)
	}
	if _, out := do(t, "GET", a+"/v1/requests/rx", "", as("alice")); out["state"] != "running" {
		t.Fatalf("rx after ops@globex's refused stop = %v, want running", out["state"])
	}
	if st, out := do(t, "POST", b+"/v1/requests/rx/cancel", `{"mode":"cancel","reason":"acme's operator"}`, as("ops@acme")); st != 200 {
		t.Fatalf("ops@acme stopping rx through b = %d %v", st, out)
	}
	waitUntil(t, "rx stopped on a by ops@acme's stop through b", func() bool {
		_, out := do(t, "GET", a+"/v1/requests/rx", "", as("ops@acme"))
		return out["state"] == "stopped_cancel"
	})
}

// TestTenantOperatorAuditBefore: a tenant's operator pages its tenant's
// events back with &before= (the cursor a page that read its bound of
// records ends short with): the page holds its tenant's events older than
// the cursor, and a filter nothing matches an empty page. One who is not
// an operator pages back through its own events.
func TestTenantOperatorAuditBefore(t *testing.T) {
	g, srvURL, keys := tenantOpsGateway(t)
	if err := g.audit.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	ops := map[string]string{"Authorization": "Bearer " + keys["ops@acme"]}
	status, out := do(t, "GET", srvURL+"/v1/audit?limit=1000", "", ops)
	evs, _ := out["events"].([]any)
	if status != 200 || len(evs) < 2 {
		t.Fatalf("ops@acme GET /v1/audit = %d with %d events, want acme's trip's: %v", status, len(evs), out)
	}
	newest, _ := path(evs[len(evs)-1], "seq").(float64)
	q := fmt.Sprintf("/v1/audit?limit=1000&before=%d", int64(newest))
	status, out = do(t, "GET", srvURL+q, "", ops)
	older, _ := out["events"].([]any)
	if status != 200 || len(older) != len(evs)-1 {
		t.Fatalf("ops@acme GET %s = %d with %d events, want the %d before the newest: %v", q, status, len(older), len(evs)-1, out)
	}
	for _, e := range older {
		if s, _ := path(e, "seq").(float64); s >= newest || path(e, "event", "tenant") != "acme" {
			t.Errorf("ops@acme GET %s has %v", q, e)
		}
	}
	q = fmt.Sprintf("/v1/audit?principal=nobody&before=%d", int64(newest))
	if status, out = do(t, "GET", srvURL+q, "", ops); status != 200 || len(out["events"].([]any)) != 0 || out["before"] != nil {
		t.Errorf("ops@acme GET %s = %d %v; want no events, no cursor (the log is shorter than a page's bound)", q, status, out)
	}
	// One who is not an operator pages back through the log too, and
	// sees only its own events there.
	q = fmt.Sprintf("/v1/audit?limit=1000&before=%d", int64(newest)+1)
	status, out = do(t, "GET", srvURL+q, "", map[string]string{"Authorization": "Bearer " + keys["alice@acme"]})
	mine, _ := out["events"].([]any)
	if status != 200 || len(mine) == 0 {
		t.Fatalf("alice@acme GET %s = %d %v; want 200 and her events", q, status, out)
	}
	for _, e := range mine {
		if path(e, "event", "principal") != "alice" || path(e, "event", "tenant") != "acme" {
			t.Errorf("alice@acme GET %s has %v", q, e)
		}
	}
	if status, out = do(t, "GET", srvURL+"/v1/audit?before=0", "", ops); status != 400 || path(out, "error", "code") != "bad_before" {
		t.Errorf("ops@acme GET /v1/audit?before=0 = %d %v; want 400 bad_before", status, out)
	}
}

// TestTenantOperatorAuditPageBounded: under more than 10,000 records of
// another tenant, a tenant operator's page whose filter nothing matches
// (?principal=nobody) ends short with before, the cursor of the records
// it did not read; the page before it reaches the log's first record and
// has none. The UI's audit page links the older events by it. Before,
// the page read the whole log and had no cursor.
func TestTenantOperatorAuditPageBounded(t *testing.T) {
	g, srvURL, keys := tenantOpsGateway(t)
	const n = 10050
	work := make(chan int)
	errs := make(chan error, 8)
	for range 8 { // together, so that the log commits them in groups
		go func() {
			var err error
			for i := range work {
				if err == nil {
					_, err = g.audit.Append(t.Context(), &audit.Event{Kind: "tool", Name: "reserve", Principal: "alice", Tenant: "globex", Request: fmt.Sprintf("globex-fill-%d", i)})
				}
			}
			errs <- err
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ops := map[string]string{"Authorization": "Bearer " + keys["ops@acme"]}
	status, out := do(t, "GET", srvURL+"/v1/audit?principal=nobody", "", ops)
	before, _ := out["before"].(float64)
	if status != 200 || len(out["events"].([]any)) != 0 || before < n-10000 {
		t.Fatalf("ops@acme GET /v1/audit?principal=nobody = %d %v; want no events and a cursor past the 10,000 records read", status, out)
	}
	q := fmt.Sprintf("/v1/audit?principal=nobody&before=%d", int64(before))
	if status, out = do(t, "GET", srvURL+q, "", ops); status != 200 || len(out["events"].([]any)) != 0 || out["before"] != nil {
		t.Errorf("ops@acme GET %s = %d %v; want no events and no cursor: the log's first record was read", q, status, out)
	}
	_, page := rawAs(t, keys["ops@acme"], "GET", srvURL+"/ui/audit?principal=nobody", "")
	if link := fmt.Sprintf(`href="/ui/audit?before=%d&amp;principal=nobody"`, int64(before)); !strings.Contains(page, link) {
		t.Errorf("ops@acme's UI audit page for principal nobody has no link to the older events (%s)", link)
	}
}
