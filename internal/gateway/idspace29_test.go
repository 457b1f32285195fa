package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOtherTenantsRequestIDAnswersAsUnknown: a request id another tenant
// uses is answered to alice of tenant globex exactly as an id no request
// has (the same status and body, the id aside) by every route that reads
// or acts on a request (the API's request, graph, cancel and end; the UI's
// request page and its stop), and a call that names it to begin or join a
// request is refused with words that say nothing of the request (nor that
// it is another principal's), and runs nothing. Before, each answered 403
// not_your_request, "belongs to another principal", where an unknown id
// got 404: one tenant learned which names another used.
func TestOtherTenantsRequestIDAnswersAsUnknown(t *testing.T) {
	g, srvURL, keys := tenantOpsGateway(t)
	const taken, unknown = "acme-trip", "nobody-trip"
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/requests/%s", ""},
		{"GET", "/v1/requests/%s/graph", ""},
		{"POST", "/v1/requests/%s/cancel", `{"mode":"cancel","reason":"mine?"}`},
		{"POST", "/v1/requests/%s/end", ""},
		{"GET", "/ui/requests/%s", ""},
		{"GET", "/ui/requests/%s/graph.svg", ""},
		{"POST", "/ui/stop/%s", "mode=isolate&reason=mine"},
	} {
		ask := func(id string) (int, string) {
			t.Helper()
			req, _ := http.NewRequest(c.method, srvURL+strings.ReplaceAll(c.path, "%s", id), strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+keys["alice@globex"])
			if strings.HasPrefix(c.path, "/ui/stop/") {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, strings.ReplaceAll(resp.Header.Get("Location")+" "+string(body), id, "ID")
		}
		tc, tb := ask(taken)
		uc, ub := ask(unknown)
		if tc != uc || tb != ub || tc < 400 {
			t.Errorf("%s %s: acme's id answers %d %q, an unknown id %d %q; want the same", c.method, c.path, tc, tb, uc, ub)
		}
		if strings.Contains(tb, "another principal") || strings.Contains(tb, "not_your_request") {
			t.Errorf("%s %s of acme's id tells it is another's: %s", c.method, c.path, tb)
		}
	}
	req, ok := g.rt.Lookup(taken)
	if !ok || req.StopCause() != nil {
		t.Fatalf("acme's request after globex's tries: kept %v, stopped %v; want it kept and not stopped", ok, req != nil && req.StopCause() != nil)
	}

	// Joining it: refused, saying nothing of it, and nothing ran in it.
	frames := len(req.Frames())
	status, out := do(t, "POST", srvURL+"/v1/calls", `{"request_id":"`+taken+`","tool_calls":[{"call_id":"c9","tool":"reserve","arguments":{"seat":"9C"}}]}`,
		map[string]string{"Authorization": "Bearer " + keys["alice@globex"]})
	text := strings.ToLower(strings.ReplaceAll(fmt.Sprint(out), taken, "ID"))
	if status != 400 || path(out, "error", "code") != "request_id_unavailable" || strings.Contains(text, "principal") || strings.Contains(text, "acme") {
		t.Errorf("alice@globex naming acme's request id: %d %v, want 400 request_id_unavailable saying nothing of it", status, out)
	}
	if n := len(req.Frames()); n != frames {
		t.Errorf("acme's request has %d frames after globex's call, want %d: the call ran in it", n, frames)
	}
	// Over MCP (_meta reach/request) too: the same words, as the tool's
	// error the model reads.
	cs, err := mcpAs(t, srvURL, keys["alice@globex"])
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "reserve", Arguments: map[string]any{"seat": "9D"}, Meta: mcp.Meta{"reach/request": taken}})
	said := fmt.Sprint(err)
	if res != nil {
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				said += " " + tc.Text
			}
		}
	}
	said = strings.ReplaceAll(said, taken, "ID")
	if err == nil && !res.IsError || !strings.Contains(said, "cannot be used") || strings.Contains(strings.ToLower(said), "principal") || strings.Contains(said, "acme") {
		t.Errorf("alice@globex naming acme's request over MCP: %q, want it refused saying nothing of it", said)
	}
	if n := len(req.Frames()); n != frames {
		t.Errorf("acme's request has %d frames after globex's MCP call, want %d", n, frames)
	}
	// Its owner, and acme's operator, still read it.
	for _, who := range []string{"alice@acme", "ops@acme", "root"} {
		if code, body := rawAs(t, keys[who], "GET", srvURL+"/v1/requests/"+taken, ""); code != 200 {
			t.Errorf("%s reading acme-trip: %d %s", who, code, body)
		}
	}
}

// TestOtherTenantsRequestIDAnswersAsUnknownOnInstances: on two instances
// of one PostgreSQL store, alice@acme's request runs on a; eve of tenant
// globex, through a (where it runs) and through b (where the shared store
// holds it), is answered for its id exactly as for an id no request has,
// by the API's request, graph, cancel and end; naming it in a call is
// refused on either instance with words that say nothing of it, and
// leaves the request running. Before, b answered 403 not_your_request, and
// its call "belongs to another principal".
func TestOtherTenantsRequestIDAnswersAsUnknownOnInstances(t *testing.T) {
	a, b, _, keys := tenantInstances(t)
	const taken, unknown = "rx-taken", "rx-nobody"
	as := func(who string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[who]} }
	if st, out := do(t, "POST", a+"/v1/calls", `{"request_id":"`+taken+`","tool_calls":[{"call_id":"c1","tool":"up__echo","arguments":{"text":"hi"}}]}`, as("alice")); st != 200 || path(out, "results", 0, "status") != "success" {
		t.Fatalf("alice on a: %d %v", st, out)
	}
	for _, base := range []string{a, b} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/v1/requests/%s", ""},
			{"GET", "/v1/requests/%s/graph", ""},
			{"POST", "/v1/requests/%s/cancel", `{"mode":"cancel","reason":"mine?"}`},
			{"POST", "/v1/requests/%s/end", ""},
		} {
			ask := func(id string) (int, string) {
				t.Helper()
				code, body := rawAs(t, keys["eve"], c.method, base+strings.ReplaceAll(c.path, "%s", id), c.body)
				return code, strings.ReplaceAll(body, id, "ID")
			}
			tc, tb := ask(taken)
			uc, ub := ask(unknown)
			if tc != uc || tb != ub || tc == 200 {
				t.Errorf("eve %s %s through %s: alice's id answers %d %q, an unknown id %d %q; want the same refusal", c.method, c.path, base, tc, tb, uc, ub)
			}
		}
		st, out := do(t, "POST", base+"/v1/calls", `{"request_id":"`+taken+`","tool_calls":[{"call_id":"c9","tool":"up__echo","arguments":{"text":"eve"}}]}`, as("eve"))
		text := strings.ToLower(strings.ReplaceAll(fmt.Sprint(out), taken, "ID"))
		if st != 400 || path(out, "error", "code") != "request_id_unavailable" || strings.Contains(text, "principal") || strings.Contains(text, "alice") {
			t.Errorf("eve naming alice's request id through %s: %d %v, want 400 request_id_unavailable saying nothing of it", base, st, out)
		}
	}
	if st, out := do(t, "GET", a+"/v1/requests/"+taken, "", as("alice")); st != 200 || out["state"] != "running" {
		t.Errorf("alice's request after eve's tries: %d %v, want it running", st, out)
	}
}

// TestOtherTenantsRequestIDThroughModelProxy: a model turn that names
// (Reach-Request) a request of another tenant is refused 400
// request_id_unavailable, an OpenAI-style error that says nothing of the
// request, and the model is not asked; the owner's turns in it go on.
// Before, it answered 403 "belongs to another principal".
func TestOtherTenantsRequestIDThroughModelProxy(t *testing.T) {
	_, url, keys, asked := budgetTenantGateway(t)
	turn := func(who, request string) (int, string) {
		t.Helper()
		r, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(`{"model":"fake","messages":[{"role":"user","content":"hi"}]}`))
		r.Header.Set("Authorization", "Bearer "+keys[who])
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Reach-Request", request)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	const taken = "acme-turns"
	if code, body := turn("alice", taken); code != 200 {
		t.Fatalf("alice's turn: %d %s", code, body)
	}
	before := *asked
	code, body := turn("eve", taken) // eve is of tenant Acme, not acme
	said := strings.ReplaceAll(body, taken, "ID")
	if code != 400 || !strings.Contains(body, "request_id_unavailable") || strings.Contains(strings.ToLower(said), "principal") || strings.Contains(said, "alice") {
		t.Errorf("eve's turn naming alice's request: %d %s, want 400 request_id_unavailable saying nothing of it", code, body)
	}
	if *asked != before {
		t.Errorf("the model was asked %d times for eve's refused turn", *asked-before)
	}
	if code, body := turn("alice", taken); code != 200 {
		t.Errorf("alice's next turn: %d %s", code, body)
	}
}
