package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tripUpstream books, charges (a card that is declined) and cancels a
// booking, and counts what ran.
type tripUpstream struct {
	mu  sync.Mutex
	ran []string // "tool id", in order
}

func (u *tripUpstream) log() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ran...)
}

func newTripShop(t *testing.T) (*shop, *tripUpstream) {
	t.Helper()
	u := &tripUpstream{}
	s := mcp.NewServer(&mcp.Implementation{Name: "trips", Version: "1"}, nil)
	type in struct {
		ID string `json:"id"`
	}
	tool := func(name, desc string, fail bool) {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: desc},
			func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
				u.mu.Lock()
				u.ran = append(u.ran, name+" "+a.ID)
				u.mu.Unlock()
				if fail {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "card declined for booking " + a.ID}}}, nil, nil
				}
				return shopText(name + " " + a.ID + ": ok"), nil, nil
			})
	}
	tool("book", "Book trip id.", false)
	tool("charge", "Charge the card for trip id.", true)
	tool("cancel_booking", "Cancel the booking of trip id.", false)
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	m := &shopModel{}
	ms := httptest.NewServer(m)
	t.Cleanup(ms.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf(`upstreams:
  - name: up
    url: %s
model: {base_url: '%s/v1', name: scripted}
tools:
  up__book: {access: write, undo: {tool: up__cancel_booking, args: '{"id": "{args.id}"}'}}
  up__charge: {access: write}
  up__cancel_booking: {access: write}
`, up.URL, ms.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	w := &wire{protocols: map[string]int{}, models: map[string]int{}}
	srv := httptest.NewServer(w.wrap(g.Handler()))
	t.Cleanup(srv.Close)
	return &shop{g: g, url: srv.URL, model: m, modelURL: ms.URL, wire: w}, u
}

// TestFrameworksCompensation: OpenAI Agents, the AI SDK and LangGraph on
// their defaults book a trip (a write whose undo the configuration names)
// and then charge its card, which the upstream declines (a result with
// isError). Reach undoes the booking: the upstream's cancel runs once, with
// the booking's id, after the failed charge; the model reads the charge's
// failure and that the booking was undone, and the run goes on to its
// answer. The run is one request; its compensation runs the undo in a
// request of its own ("<request>/compensate/<n>"), which the UI lists and
// draws, each request's page linking the other (before, nothing on the
// run's page showed that its booking was undone), and which the audit log
// holds.
func TestFrameworksCompensation(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai",
		"@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai")
	for _, fw := range []string{"openai-agents", "ai-sdk", "langgraph"} {
		t.Run(fw, func(t *testing.T) {
			s, up := newTripShop(t)
			r := runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", "trip", nil)
			t.Logf("the model read: %s", clip(r.Text, 600))
			if !r.OK || !strings.HasPrefix(r.Text, "trip: ") {
				t.Fatalf("the run: %+v", r)
			}
			if got, want := strings.Join(up.log(), ", "), "book 7, charge 7, cancel_booking 7"; got != want {
				t.Errorf("the upstream ran %s; want %s", got, want)
			}
			parts := strings.Split(strings.TrimPrefix(r.Text, "trip: "), " | ")
			if len(parts) != 2 || !strings.Contains(parts[1], "card declined") ||
				!strings.Contains(parts[1], `compensated, newest first: up__cancel_booking (undoing up__book {"id":"7"})`) {
				t.Errorf("the model read of the charge %q; want its failure and the booking's undo", parts)
			}
			// The run's request: the booking done, the charge failed; the
			// undo in the compensation's request, named after it.
			var root, comp *reach.Request
			for _, q := range s.g.rt.Requests() {
				if strings.Contains(q.ID(), "/compensate/") {
					comp = q
				} else if root == nil || q.Root() != root {
					if root != nil {
						t.Errorf("the run is in requests %s and %s, want one", root.ID(), q.ID())
					}
					root = q.Root()
				}
			}
			if root == nil || comp == nil || !strings.HasPrefix(comp.ID(), root.ID()+"/compensate/") {
				t.Fatalf("the run's request %v, the compensation's %v", root, comp)
			}
			var tools []string
			for _, f := range root.Frames() {
				if f.Kind == reach.ToolFrame {
					tools = append(tools, f.Name+" "+f.State().String())
				}
			}
			if got := strings.Join(tools, ", "); got != "up__book completed, up__charge failed" {
				t.Errorf("the run's tool calls: %s", got)
			}
			var undos []string
			for _, f := range comp.Frames() {
				undos = append(undos, f.Name+" "+string(f.Args)+" "+f.State().String())
			}
			if got := strings.Join(undos, ", "); got != `up__cancel_booking {"id":"7"} completed` || comp.Agent() != "reach" {
				t.Errorf("the compensation's request %s (agent %s): %s", comp.ID(), comp.Agent(), got)
			}
			// The UI: the compensation's request listed and its graph
			// drawn with the undo; the audit log has the undo.
			if code, page := get(t, s.url+"/ui/"); code != 200 || !strings.Contains(page, "/compensate/") {
				t.Errorf("the UI's requests page (%d) does not list the compensation's request %s", code, comp.ID())
			}
			if code, svg := get(t, s.url+"/ui/requests/"+url.PathEscape(comp.ID())+"/graph.svg"); code != 200 ||
				!strings.Contains(svg, `class="frame tool completed"`) || !strings.Contains(svg, "up__cancel_booking") {
				t.Errorf("the compensation's graph in the UI (%d): %s", code, clip(svg, 2000))
			}
			// Each request's page links the other: the run's names the
			// request its writes were undone in, the compensation's the
			// request whose writes it undid.
			if code, page := get(t, s.url+"/ui/requests/"+url.PathEscape(root.ID())); code != 200 ||
				!strings.Contains(page, `its writes were undone in <a href="/ui/requests/`+url.PathEscape(comp.ID())+`">`) {
				t.Errorf("the run's request page (%d) does not link its compensation %s", code, comp.ID())
			}
			if code, page := get(t, s.url+"/ui/requests/"+url.PathEscape(comp.ID())); code != 200 ||
				!strings.Contains(page, `undoes the writes of <a href="/ui/requests/`+url.PathEscape(root.ID())+`">`) {
				t.Errorf("the compensation's request page (%d) does not link the run's request %s", code, root.ID())
			}
			s.g.audit.Flush(t.Context())
			_, out := do(t, "GET", s.url+"/v1/audit?request="+url.QueryEscape(comp.ID()), "", nil)
			events, _ := out["events"].([]any)
			undone := 0
			for _, e := range events {
				if path(e, "event", "kind") == "tool" && path(e, "event", "name") == "up__cancel_booking" && path(e, "event", "decision") == "completed" {
					undone++
				}
			}
			if undone != 1 {
				t.Errorf("the audit of the compensation %s holds %d undos, want 1: %v", comp.ID(), undone, clip(fmt.Sprint(events), 2000))
			}
		})
	}
}
