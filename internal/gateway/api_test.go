package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/link"
)

func TestAPICallsEnvelope(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	status, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"r1","tool_calls":[
		{"call_id":"a","tool":"get_order","arguments":{"order_id":"1001"}},
		{"call_id":"b","tool":"get_order","arguments":{"order_id":"12"}},
		{"call_id":"c","tool":"search_kb","arguments":{"query":"refund policy"}}]}`, nil)
	if status != 200 {
		t.Fatalf("status %d: %v", status, out)
	}
	if got := out["request_id"]; got != "r1" {
		t.Errorf("request_id = %v, want r1", got)
	}
	for i, want := range []string{"success", "refused", "success"} {
		if got := path(out, "results", i, "status"); got != want {
			t.Errorf("results[%d].status = %v, want %s", i, got, want)
		}
	}
	if got := path(out, "results", 0, "data", "customer"); got != "Ada" {
		t.Errorf("order 1001 customer = %v, want Ada", got)
	}
	if got := path(out, "results", 1, "error", "fields", 0, "path"); got != "/order_id" {
		t.Errorf("invalid argument path = %v, want /order_id", got)
	}
	// The same request id continues the same request.
	do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"r1","tool_calls":[{"call_id":"d","tool":"search_kb","arguments":{"query":"shipping"}}]}`, nil)
	r, ok := g.Runtime().Lookup("r1")
	if !ok {
		t.Fatal("request r1 is unknown")
	}
	if got := r.Usage().ToolCalls; got != 4 {
		t.Errorf("r1 made %d tool calls, want 4", got)
	}
	// Without a request id, each envelope begins a new request.
	_, out = do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"x"}}]}`, nil)
	if id, _ := out["request_id"].(string); id == "" || id == "r1" {
		t.Errorf("unnamed envelope got request %q, want a new one", id)
	}
}

func TestAPIRequestsNewestFirst(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	for _, id := range []string{"first", "second", "third"} {
		do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"`+id+`","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"x"}}]}`, nil)
	}
	status, out := do(t, "GET", srv.URL+"/v1/requests", "", nil)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	var ids []string
	for _, r := range out["requests"].([]any) {
		ids = append(ids, r.(map[string]any)["id"].(string))
		for _, k := range []string{"id", "state", "principal", "started"} {
			if _, ok := r.(map[string]any)[k]; !ok {
				t.Errorf("request summary lacks %q: %v", k, r)
			}
		}
	}
	if got, want := strings.Join(ids, ","), "third,second,first"; got != want {
		t.Errorf("requests = %s, want %s", got, want)
	}
}

func TestAPIRequestDetailAndGraph(t *testing.T) {
	g := newTestGateway(t, &config.Config{Budgets: map[string]config.Budget{"default": {Budget: reach.Budget{ToolCalls: 50, Depth: 4, Wall: time.Minute}}}})
	srv := serveTest(t, g)
	_, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"r","tool_calls":[{"call_id":"f","tool":"format_answer","arguments":{"text":"refunds take 30 days"}}]}`, nil)
	if got := path(out, "results", 0, "data", "markdown"); got == nil || !strings.Contains(got.(string), "Refund policy") {
		t.Fatalf("format_answer = %v, want a markdown answer citing the refund policy", got)
	}
	status, d := do(t, "GET", srv.URL+"/v1/requests/r", "", nil)
	if status != 200 {
		t.Fatalf("status %d: %v", status, d)
	}
	if got := path(d, "budget", "tool_calls"); got != 50.0 {
		t.Errorf("budget.tool_calls = %v, want 50", got)
	}
	if got := path(d, "used", "tool_calls"); got != 2.0 {
		t.Errorf("used.tool_calls = %v, want 2 (format_answer and the nested search_kb)", got)
	}
	if got := path(d, "left", "tool_calls"); got != 48.0 {
		t.Errorf("left.tool_calls = %v, want 48", got)
	}
	if got := path(d, "used", "max_depth"); got != 2.0 {
		t.Errorf("used.max_depth = %v, want 2", got)
	}

	_, gr := do(t, "GET", srv.URL+"/v1/requests/r/graph?format=json", "", nil)
	if gr["request"] != "r" {
		t.Errorf("graph request = %v", gr["request"])
	}
	frames := gr["frames"].([]any)
	byName := map[string]map[string]any{}
	for _, f := range frames {
		m := f.(map[string]any)
		for _, k := range []string{"id", "parent", "kind", "name", "arguments", "status", "error", "started", "ended", "tokens"} {
			if _, ok := m[k]; !ok && k != "arguments" && k != "error" {
				t.Errorf("frame lacks %q: %v", k, m)
			}
		}
		if _, seen := byName[m["name"].(string)]; !seen {
			byName[m["name"].(string)] = m
		}
	}
	fa, model, kb := byName["format_answer"], byName["scripted"], byName["search_kb"]
	if fa == nil || model == nil || kb == nil {
		t.Fatalf("graph lacks format_answer, the model or search_kb: %v", frames)
	}
	if fa["parent"] != nil || model["parent"] != fa["id"] || kb["parent"] != model["id"] {
		t.Errorf("nesting: format_answer.parent=%v, model.parent=%v (want %v), search_kb.parent=%v (want %v)",
			fa["parent"], model["parent"], fa["id"], kb["parent"], model["id"])
	}
	if model["kind"] != "model" || model["tokens"].(float64) <= 0 {
		t.Errorf("model frame = %v, want kind model with tokens", model)
	}
}

func TestAPIGraphDOTShowsCycles(t *testing.T) {
	g := newTestGateway(t, nil)
	// A tool that calls itself with the same arguments: the inner call is a cycle.
	g.rt.MustRegister(g.prepare(reach.Tool{Name: "recurse", Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			res := g.rt.Call(ctx, &reach.Call{ID: "inner", Tool: "recurse", Arguments: args})
			return json.Marshal(res.Status)
		}}))
	srv := serveTest(t, g)
	_, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"cyc","tool_calls":[{"call_id":"a","tool":"recurse","arguments":{"x":1}}]}`, nil)
	if got := path(out, "results", 0, "data"); got != "refused" {
		t.Fatalf("inner call = %v, want refused", got)
	}
	resp, err := http.Get(srv.URL + "/v1/requests/cyc/graph?format=dot")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dot, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/vnd.graphviz") {
		t.Errorf("content type %q", ct)
	}
	r, _ := g.rt.Lookup("cyc")
	fs := r.Frames()
	var outer, inner *reach.Frame
	for _, f := range fs {
		if f.CallID == "a" {
			outer = f
		} else if f.CallID == "inner" {
			inner = f
		}
	}
	want := fmt.Sprintf("%s -> %s [style=dashed", dotID(inner.ID), dotID(outer.ID))
	if !strings.Contains(string(dot), want) {
		t.Errorf("DOT lacks the dashed cycle edge %q:\n%s", want, dot)
	}
	if !strings.HasPrefix(string(dot), "digraph ") || !strings.HasSuffix(string(dot), "}\n") {
		t.Errorf("not a DOT graph:\n%s", dot)
	}
	resp, err = http.Get(srv.URL + "/v1/requests/cyc/graph?format=svg")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	svg, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(string(svg), `class="cycle"`) {
		t.Errorf("SVG graph (%s) lacks the cycle edge:\n%s", resp.Header.Get("Content-Type"), svg)
	}
}

func TestAPIErrors(t *testing.T) {
	g := newTestGateway(t, &config.Config{MaxBodyBytes: 200})
	srv := serveTest(t, g)
	big := `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"` + strings.Repeat("x", 300) + `"}}]}`
	cases := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		code                     string
	}{
		{"not json", "POST", "/v1/calls", `{`, nil, 400, "bad_envelope"},
		{"unknown field", "POST", "/v1/calls", `{"calls":[]}`, nil, 400, "bad_envelope"},
		{"no calls", "POST", "/v1/calls", `{"tool_calls":[]}`, nil, 400, "bad_envelope"},
		{"too large", "POST", "/v1/calls", big, nil, 413, "body_too_large"},
		{"too large mcp", "POST", "/mcp", big, nil, 413, "body_too_large"},
		{"unknown request", "GET", "/v1/requests/nope", "", nil, 404, "unknown_request"},
		{"unknown request graph", "GET", "/v1/requests/nope/graph", "", nil, 404, "unknown_request"},
		{"unknown route", "GET", "/v2/things", "", nil, 404, "not_found"},
		{"wrong method", "DELETE", "/v1/requests", "", nil, 405, "method_not_allowed"},
		{"a state not filtered by", "GET", "/v1/requests?state=completed", "", nil, 400, "bad_state"},
		{"wrong method for calls", "GET", "/v1/calls", "", nil, 405, "method_not_allowed"},
		{"wrong method for an id", "POST", "/v1/requests/nope", "", nil, 405, "method_not_allowed"},
		{"bad parent header", "POST", "/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"x"}}]}`,
			map[string]string{"Reach-Parent": "xyz"}, 400, "bad_parent"},
		{"unknown parent", "POST", "/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"x"}}]}`,
			map[string]string{"Reach-Parent": "00000000000000ff"}, 400, "unknown_parent"},
		{"request mismatch", "POST", "/v1/calls", `{"request_id":"a","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"x"}}]}`,
			map[string]string{"Baggage": "reach.request=b"}, 409, "request_mismatch"},
		{"foreign host", "GET", "/healthz", "", map[string]string{"Host": "attacker.example"}, 403, "not_local"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			for k, v := range tc.header {
				if k == "Host" {
					req.Host = v
				}
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				Error httpjson.Error `json:"error"`
			}
			data, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(data, &out); err != nil {
				t.Fatalf("body is not JSON: %q", data)
			}
			if resp.StatusCode != tc.status || out.Error.Code != tc.code {
				t.Errorf("got %d %q, want %d %q (%s)", resp.StatusCode, out.Error.Code, tc.status, tc.code, data)
			}
			if out.Error.Message == "" || (tc.status != 500 && out.Error.Suggestion == "" && tc.code != "bad_envelope") {
				t.Errorf("error lacks a message or a suggestion: %s", data)
			}
		})
	}
	// A request's "state" as a filter is told the activity it has.
	if _, out := do(t, "GET", srv.URL+"/v1/requests?state=stopped_cancel", "", nil); !strings.Contains(fmt.Sprint(path(out, "error", "message")), "is stopped") {
		t.Errorf("state=stopped_cancel: %v, want it told such a request is stopped", out)
	}
	// A field the client sent is named as it was sent.
	if _, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{}},{"call_id":"a","tool":"search_kb","arguments":{}}]}`, nil); path(out, "error", "message") != `tool_calls[1]: call_id "a" is used twice.` {
		t.Errorf("a call id twice: %v", out)
	}
	// A path served for other methods names them.
	if resp, err := http.Get(srv.URL + "/v1/calls"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET /v1/calls: Allow %q, want POST", resp.Header.Get("Allow"))
	}
	// A cancel with an unknown mode.
	do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"m","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"x"}}]}`, nil)
	if status, out := do(t, "POST", srv.URL+"/v1/requests/m/cancel", `{"mode":"hard"}`, nil); status != 400 || path(out, "error", "code") != "bad_mode" {
		t.Errorf("bad mode: %d %v", status, out)
	}
}

// TestAPIBodyLimitChunked: a body without a declared length is cut at the
// limit, with the same JSON 413 on every route; one under the limit works.
func TestAPIBodyLimitChunked(t *testing.T) {
	g := newTestGateway(t, &config.Config{MaxBodyBytes: 200})
	srv := serveTest(t, g)
	post := func(path, body string) (int, []byte) {
		req, _ := http.NewRequest("POST", srv.URL+path, io.NopCloser(strings.NewReader(body)))
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	big := `{"tool_calls":[{"call_id":"a","tool":"x","arguments":{"q":"` + strings.Repeat("y", 500) + `"}}]}`
	for _, path := range []string{"/v1/calls", "/mcp", "/v1/approvals/1/approve", "/v1/chat/completions"} {
		if status, data := post(path, big); status != 413 || !bytes.Contains(data, []byte(`"body_too_large"`)) {
			t.Errorf("%s: got %d %s, want a JSON 413 body_too_large", path, status, data)
		}
	}
	if status, data := post("/v1/calls", `{"tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"x"}}]}`); status != 200 {
		t.Errorf("a small chunked body: %d %s", status, data)
	}
}

func TestAPICancel(t *testing.T) {
	_, srv, done := waitingCall(t)
	status, out := do(t, "POST", srv.URL+"/v1/requests/long/cancel", `{"mode":"cancel","reason":"user pressed stop"}`, nil)
	if status != 200 || out["state"] != "stopped_cancel" || path(out, "stop", "reason") != "user pressed stop" {
		t.Fatalf("cancel answered %d %v", status, out)
	}
	select {
	case res := <-done:
		if got := path(res, "results", 0, "status"); got != "cancelled" {
			t.Errorf("in-flight call = %v, want cancelled", got)
		}
		if msg, _ := path(res, "results", 0, "error", "message").(string); !strings.Contains(msg, "user pressed stop") {
			t.Errorf("message %q does not give the reason", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight call did not end after cancel")
	}
	// The request stays stopped: later calls in it are refused at once.
	_, res := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"long","tool_calls":[{"call_id":"x","tool":"search_kb","arguments":{"query":"x"}}]}`, nil)
	if got := path(res, "results", 0, "error", "code"); got != "stopped_cancel" {
		t.Errorf("a call after cancel = %v, want stopped_cancel", got)
	}
}

// TestAPIReachParentLinksAcrossProcesses: a tool whose implementation calls
// the gateway's API (as a service in another process would) with its frame
// as Reach-Parent or traceparent nests the new call under its own frame, so
// that re-entering itself is seen as a cycle.
func TestAPIReachParentLinksAcrossProcesses(t *testing.T) {
	for _, header := range []string{"Reach-Parent", "traceparent"} {
		t.Run(header, func(t *testing.T) {
			g := newTestGateway(t, nil)
			srv := serveTest(t, g)
			var nested []map[string]any
			g.rt.MustRegister(g.prepare(reach.Tool{Name: "remote", Reentrancy: reach.Reentrant,
				Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
					f, _ := reach.FrameFrom(ctx)
					h := map[string]string{"Reach-Parent": f.ID.String()}
					if header == "traceparent" {
						h = map[string]string{"traceparent": link.Traceparent(f.Request, f.ID)}
					}
					for _, call := range []string{
						`{"call_id":"n1","tool":"get_order","arguments":{"order_id":"1002"}}`,
						`{"call_id":"n2","tool":"remote","arguments":` + string(args) + `}`,
					} {
						_, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[`+call+`]}`, h)
						nested = append(nested, out)
					}
					return []byte(`"ok"`), nil
				}}))
			_, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"outer","tool_calls":[{"call_id":"top","tool":"remote","arguments":{"q":1}}]}`, nil)
			if path(out, "results", 0, "status") != "success" {
				t.Fatalf("outer call: %v", out)
			}
			for i, n := range nested {
				if n["request_id"] != "outer" {
					t.Errorf("nested call %d ran in request %v, want outer", i, n["request_id"])
				}
			}
			if got := path(nested[0], "results", 0, "status"); got != "success" {
				t.Errorf("nested get_order = %v", got)
			}
			if got := path(nested[1], "results", 0, "error", "code"); got != "cycle" {
				t.Errorf("nested re-entry = %v, want a cycle refusal", path(nested[1], "results", 0))
			}
			r, _ := g.rt.Lookup("outer")
			var top *reach.Frame
			for _, f := range r.Frames() {
				if f.CallID == "top" {
					top = f
				}
			}
			for _, f := range r.Frames() {
				if (f.CallID == "n1" || f.CallID == "n2") && f.Parent != top {
					t.Errorf("frame %s nests under %v, want the top call's frame", f.CallID, f.Parent)
				}
				if f.CallID == "n2" && f.CycleTo() != top {
					t.Errorf("the cycle targets %v, want the top call", f.CycleTo())
				}
			}
		})
	}
}

func TestHealthz(t *testing.T) {
	g := newTestGateway(t, nil)
	srv := serveTest(t, g)
	status, out := do(t, "GET", srv.URL+"/healthz", "", nil)
	if status != 200 || out["status"] != "ok" || out["tools"] != 4.0 {
		t.Errorf("healthz = %d %v", status, out)
	}
}
