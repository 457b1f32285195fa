package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// counter counts the runs of each tool of an upstream.
type counter struct {
	mu   sync.Mutex
	runs map[string]int // tool -> runs
}

func (c *counter) n(tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[tool]
}

// shopUpstream serves search (a read), book (a write) and close (a high
// risk write, by the gateway's configuration), counting their runs.
func shopUpstream(t *testing.T, c *counter) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	type args struct {
		ID string `json:"id"`
	}
	for _, name := range []string{"search", "book", "close"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: name + " things."},
			func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
				c.mu.Lock()
				c.runs[name]++
				c.mu.Unlock()
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(`{"%s":%q}`, name, a.ID)}}}, nil, nil
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// get fetches a page and returns its status and body.
func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRestartKeepsWork: what a gateway knew before a kill -9 it knows after
// its restart, through the CLI, the API and the UI: pending approvals (and
// deciding them after the restart lets the agent's repeated call run
// exactly once: same request and call, or same idempotency key), the
// request list with each request's state and graph, a stopped request
// that stays stopped, and audit page links to requests of the earlier run.
func TestRestartKeepsWork(t *testing.T) {
	if testing.Short() {
		t.Skip("restart test skipped in -short mode")
	}
	c := &counter{runs: map[string]int{}}
	up := shopUpstream(t, c)
	cfg := writeConfig(t, `upstreams:
  - {name: shop, url: '`+up+`'}
tools:
  shop__search: {access: read}
  shop__book: {access: write, reentrancy: reentrant}
  shop__close: {access: high_risk}
`)
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	api := []string{"--api", base}
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	env := func(req, id, tool, key string) string {
		k := ""
		if key != "" {
			k = `,"idempotency_key":"` + key + `"`
		}
		r := ""
		if req != "" {
			r = `"request_id":"` + req + `",`
		}
		return `{` + r + `"tool_calls":[{"call_id":"` + id + `","tool":"shop__` + tool + `","arguments":{"id":"x"}` + k + `}]}`
	}
	post := func(path string) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(`{"mode":"cancel","reason":"wrong shop"}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("POST %s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	// trip: a read and a write, ended. halt: stopped. ask: a high-risk
	// call with an idempotency key, pending, cut off by the kill. ask2:
	// the same call without a key, pending, its request ended.
	for _, r := range []struct{ req, id, tool string }{{"trip", "s1", "search"}, {"trip", "b1", "book"}, {"halt", "s1", "search"}} {
		if res := call(t, base, env(r.req, r.id, r.tool, "")); res.Status != "success" {
			t.Fatalf("%s %s: %+v", r.req, r.tool, res)
		}
	}
	post("/v1/requests/trip/end")
	post("/v1/requests/halt/cancel")
	if res := call(t, base, env("ask", "c1", "close", "close-42")); res.Status != "pending" {
		t.Fatalf("ask: %+v", res)
	}
	if res := call(t, base, env("ask2", "c1", "close", "")); res.Status != "pending" {
		t.Fatalf("ask2: %+v", res)
	}
	post("/v1/requests/ask2/end")
	out, _, err := runCmd(t, newApprovals, append([]string{"list", "--json"}, api...)...)
	if err != nil {
		t.Fatal(err)
	}
	var before struct {
		Approvals []struct {
			ID, Request, Status string
			Votes               []any
			Expires             string
		}
	}
	json.Unmarshal([]byte(out), &before)
	if len(before.Approvals) != 2 {
		t.Fatalf("approvals before the restart: %s", out)
	}

	cmd.Process.Kill() // kill -9
	cmd.Wait()
	cmd = startReach(t, cfg, addr, data)

	// The approvals: the CLI, the API and the UI list them as they were.
	out, _, err = runCmd(t, newApprovals, append([]string{"list", "--json"}, api...)...)
	if err != nil {
		t.Fatal(err)
	}
	var after struct {
		Approvals []struct {
			ID, Request, Status string
			Votes               []any
			Expires             string
		}
	}
	json.Unmarshal([]byte(out), &after)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("approvals after the restart:\n%+v\nbefore:\n%+v", after, before)
	}
	byRequest := map[string]string{}
	for _, a := range after.Approvals {
		byRequest[a.Request] = a.ID
	}
	if _, page := get(t, base+"/ui/approvals"); !strings.Contains(page, byRequest["ask"]) || !strings.Contains(page, byRequest["ask2"]) {
		t.Errorf("the UI's inbox after the restart lacks the approvals %v", byRequest)
	}

	// The requests: listed with their states, each with its graph.
	out, _, err = runCmd(t, newRequests, api...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"trip", "halt", "ask", "ask2"} {
		if !regexp.MustCompile(`(?m)^` + want + `\s`).MatchString(out) {
			t.Errorf("reach requests after the restart lacks %s:\n%s", want, out)
		}
	}
	states := map[string]string{}
	status, page := get(t, base+"/v1/requests")
	var list struct{ Requests []struct{ ID, State string } }
	json.Unmarshal([]byte(page), &list)
	for _, r := range list.Requests {
		states[r.ID] = r.State
	}
	if status != 200 || states["trip"] != "completed" || states["halt"] != "stopped_cancel" || states["ask"] != "interrupted" || states["ask2"] != "completed" {
		t.Errorf("GET /v1/requests after the restart: %d %v", status, states)
	}
	out, _, err = runCmd(t, newGraph, append([]string{"trip", "--format", "json"}, api...)...)
	var g struct {
		Frames []struct{ Name, Status string }
	}
	json.Unmarshal([]byte(out), &g)
	if err != nil || fmt.Sprint(g.Frames) != "[{shop__search completed} {shop__book completed}]" {
		t.Errorf("reach graph trip after the restart: %v %s", err, out)
	}
	if status, page := get(t, base+"/ui/requests/trip"); status != 200 || !strings.Contains(page, "shop__book") {
		t.Errorf("the UI's page of trip after the restart: %d", status)
	}
	// Every request the audit page links to has its page.
	_, page = get(t, base+"/ui/audit")
	links := regexp.MustCompile(`href="(/ui/requests/[^"]+)"`).FindAllStringSubmatch(page, -1)
	var seen []string
	for _, l := range links {
		if p, _ := url.PathUnescape(l[1]); !slices.Contains(seen, p) {
			seen = append(seen, p)
			if status, body := get(t, base+l[1]); status != 200 {
				t.Errorf("the audit page's link %s: %d %s", l[1], status, body)
			}
		}
	}
	if len(seen) < 4 {
		t.Errorf("the audit page links to %v; want the requests of the earlier run", seen)
	}

	// The stopped request stays stopped: a call naming it is refused, and runs nothing.
	searches := c.n("search")
	if res := call(t, base, env("halt", "s2", "search", "")); res.Error == nil || res.Error.Code != "stopped_cancel" ||
		!strings.Contains(res.Error.Message, "wrong shop") {
		t.Errorf("a call in the stopped request after the restart: %+v %+v", res, res.Error)
	}
	if c.n("search") != searches {
		t.Error("a call in the stopped request ran")
	}

	// Decided after the restart (the CLI, then the UI), each approved call
	// runs once: repeated with its idempotency key in a new request, and in
	// its own request with its call id.
	if out, _, err := runCmd(t, newApprovals, append([]string{"approve", byRequest["ask"]}, api...)...); err != nil {
		t.Fatalf("approve %s: %v %s", byRequest["ask"], err, out)
	}
	// The UI's forms carry the page's token.
	_, apPage := get(t, base+"/ui/approvals")
	tok := regexp.MustCompile(`name="reach-csrf" content="([^"]+)"`).FindStringSubmatch(apPage)
	if tok == nil {
		t.Fatal("the approvals page has no form token")
	}
	form := strings.NewReader(url.Values{"reason": {"fine"}, "csrf": {tok[1]}}.Encode())
	req, _ := http.NewRequest("POST", base+"/ui/approvals/"+byRequest["ask2"]+"/approve", form)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for i := range 2 {
		if res := call(t, base, env("", "c9", "close", "close-42")); res.Status != "success" || res.Replayed != (i > 0) {
			t.Errorf("repeat %d of the call with the approved key: %+v", i, res)
		}
		if res := call(t, base, env("ask2", "c1", "close", "")); res.Status != "success" || res.Replayed != (i > 0) {
			t.Errorf("repeat %d of the approved call in ask2: %+v", i, res)
		}
	}
	if n := c.n("close"); n != 2 {
		t.Errorf("the two approved calls ran %d times in all, want twice", n)
	}
	cmd.Process.Kill()
	cmd.Wait()
	cmd = startReach(t, cfg, addr, data)
	out, _, _ = runCmd(t, newApprovals, append([]string{"list", "--status", "used"}, api...)...)
	if strings.Count(out, "(used)") != 2 {
		t.Errorf("approvals used, after another restart:\n%s", out)
	}
	if res := call(t, base, env("", "c9", "close", "close-42")); res.Status != "success" || !res.Replayed || c.n("close") != 2 {
		t.Errorf("the approved call after another restart: %+v, runs %d", res, c.n("close"))
	}
}

// TestServedGraphOfALongRequest: a request of more calls than reach serve
// keeps in memory shows all of them, in order, through the API, the CLI
// and the UI: the older ones read back from the store.
func TestServedGraphOfALongRequest(t *testing.T) {
	up := shopUpstream(t, &counter{runs: map[string]int{}})
	tools := "tools: {shop__search: {access: read}, shop__book: {access: write}}\n"
	cfg := writeConfig(t, "upstreams: [{name: shop, url: '"+up+"'}]\n"+tools+"budgets: {default: {turns: 0, depth: 0, tool_calls: 0, wall: 0s}}\n")
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	const n = 60
	var want []string
	for i := range n {
		tool := "search"
		if i%7 == 3 {
			tool = "book"
		}
		env := fmt.Sprintf(`{"request_id":"long","tool_calls":[{"call_id":"c%d","tool":"shop__%s","arguments":{"id":"x%d"}}]}`, i, tool, i)
		if res := call(t, base, env); res.Status != "success" {
			t.Fatalf("call %d: %+v", i, res)
		}
		want = append(want, fmt.Sprintf("c%d shop__%s completed", i, tool))
	}
	out, _, err := runCmd(t, newGraph, "long", "--format", "json", "--api", base)
	var g struct {
		Frames []struct {
			CallID       string `json:"call_id"`
			Name, Status string
		}
	}
	json.Unmarshal([]byte(out), &g)
	var got []string
	for _, f := range g.Frames {
		got = append(got, fmt.Sprintf("%s %s %s", f.CallID, f.Name, f.Status))
	}
	if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("reach graph long: %v: %d frames, want %d:\n%s", err, len(got), n, strings.Join(got, "\n"))
	}
	args := func(i int) string { return fmt.Sprintf("{&#34;id&#34;:&#34;x%d&#34;}", i) } // as the page shows them
	if status, page := get(t, base+"/ui/requests/long"); status != 200 || !strings.Contains(page, args(0)) || !strings.Contains(page, args(n-1)) {
		t.Errorf("the UI's page of long: %d, lacks the first or the last call", status)
	}
}

// TestStopEndsApprovals: stopping a request ends the approvals of its
// calls that carry no idempotency key (no call runs in it again, so none
// could use them), saying why; one whose call carries a key stays pending,
// for the agent's call in a new request.
func TestStopEndsApprovals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts reach serve")
	}
	up := shopUpstream(t, &counter{runs: map[string]int{}})
	cfg := writeConfig(t, "upstreams:\n  - {name: shop, url: '"+up+"'}\ntools:\n  shop__close: {access: high_risk}\n")
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for _, c := range []struct{ id, arg, key string }{{"c1", "x", ""}, {"c2", "y", `,"idempotency_key":"k-y"`}} {
		env := `{"request_id":"ask","tool_calls":[{"call_id":"` + c.id + `","tool":"shop__close","arguments":{"id":"` + c.arg + `"}` + c.key + `}]}`
		if res := call(t, base, env); res.Status != "pending" {
			t.Fatalf("%s: %+v, want pending", c.id, res)
		}
	}
	resp, err := http.Post(base+"/v1/requests/ask/cancel", "application/json", strings.NewReader(`{"mode":"cancel","reason":"wrong account"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, body := get(t, base+"/v1/approvals")
	var list struct {
		Approvals []struct {
			Status, Note string
			Arguments    json.RawMessage
		}
	}
	json.Unmarshal([]byte(body), &list)
	got := map[string]string{}
	for _, a := range list.Approvals {
		got[string(a.Arguments)] = a.Status + ": " + a.Note
	}
	if s := got[`{"id":"x"}`]; !strings.HasPrefix(s, "expired: ") || !strings.Contains(s, "Request ask was stopped") {
		t.Errorf("the approval without a key after the stop: %q", s)
	}
	if s := got[`{"id":"y"}`]; !strings.HasPrefix(s, "pending") {
		t.Errorf("the approval with a key after the stop: %q, want pending", s)
	}
}
