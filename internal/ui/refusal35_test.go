package ui

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/budget"
	"github.com/agentreach/reach/internal/callgraph"
)

// TestBrowser35RefusedSubAgentCall: a planner hands a task to an executor
// with a budget of one tool call; the executor's second call is refused.
// In chromium, from the requests list, one click on the planner's request
// shows the executor's refused call with why (the budget spent) and what
// to do (the suggestion the agent was given). Before, the page showed the
// refusal's message only: what to do was nowhere in the UI.
func TestBrowser35RefusedSubAgentCall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	dir := os.Getenv("REACH_BROWSER_CACHE")
	if dir == "" {
		root, _ := filepath.Abs("../..")
		dir = filepath.Join(root, ".cache", "browser")
	}
	pw := filepath.Join(dir, "node_modules", "playwright-core")
	skip := t.Skip
	if os.Getenv("REACH_CI") != "" {
		skip = t.Fatal
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		skip("chromium not installed (scripts/browser-deps.sh installs it)")
	}
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(pw); err != nil || statErr != nil {
		skip("node or playwright-core missing (scripts/browser-deps.sh installs them)")
	}

	rt := reach.New(&reach.Options{})
	rt.MustRegister(reach.Tool{Name: "search_kb", Access: reach.Read, Reentrancy: reach.Reentrant, Description: "Searches the knowledge base.",
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`["a"]`), nil }})
	ctx, root, err := rt.Begin(t.Context(), &reach.RequestOptions{ID: "plan", Agent: "planner"})
	if err != nil {
		t.Fatal(err)
	}
	mctx, m, _ := rt.BeginModel(ctx, "planner-model")
	sctx, sub, err := rt.Delegate(mctx, &callgraph.Delegation{Agent: "executor", Task: "find the refund policy", Budget: &budget.Budget{ToolCalls: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ectx, em, _ := rt.BeginModel(sctx, "executor-model")
	for _, id := range []string{"s1", "s2"} {
		rt.Call(ectx, &reach.Call{ID: id, Tool: "search_kb", Arguments: json.RawMessage(`{"q":"refund policy"}`)})
	}
	em.EndModel(reach.TokenUsage{Input: 10})
	sub.End()
	m.EndModel(reach.TokenUsage{Input: 10})
	var refused *reach.Error
	for _, f := range sub.Frames() {
		if f.State() == reach.Refused {
			refused = f.Err()
		}
	}
	if refused == nil || refused.Suggestion == "" {
		t.Fatalf("the executor's second call: %+v; want a refusal with a suggestion", refused)
	}
	_ = root

	srv := httptest.NewServer(New(Options{Runtime: rt}))
	defer srv.Close()
	cmd := exec.CommandContext(t.Context(), node, "testdata/refusal35.js")
	cmd.Env = append(os.Environ(), "BASE="+srv.URL, "CHROMIUM="+chromium, "PW="+pw, "REQ=plan", "SHOT="+filepath.Join(t.TempDir(), "refused.png"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser script: %v\n%s", err, out)
	}
	var saw struct {
		Error, Path, Name, Text string
		Clicks, RefusedRows     int
	}
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("browser output %q: %v", out, err)
	}
	t.Logf("the browser saw %+v", saw)
	if saw.Error != "" || saw.Path != "/ui/requests/plan" || saw.RefusedRows != 1 || saw.Name != "search_kb" {
		t.Fatalf("one click from the list: %+v; want the planner's page with the executor's refused search_kb", saw)
	}
	if !strings.Contains(saw.Text, refused.Message) {
		t.Errorf("the refused call reads %q; want why: %q", saw.Text, refused.Message)
	}
	if !strings.Contains(saw.Text, refused.Suggestion) {
		t.Errorf("the refused call reads %q; want what to do: %q", saw.Text, refused.Suggestion)
	}
}
