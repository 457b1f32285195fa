package gateway

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Capabilities through real parts (docs/TESTING.md): G3's contract
// modes, S3's serialized writes and deadlocks, G5's spans, R4's order of
// writes to one entity, each with OpenAI Agents, the AI SDK and LangGraph
// on their defaults, the scripted model (shopModel) behind reach's model
// proxy, and a desk upstream whose tools call reach back, as a tool that
// is itself an agent or a service in front of other tools does; and R4's
// calls that consume each other's results, to server-memory from npm.

// fw34Turn plays the tasks of this file's tests for the scripted model:
// the call of the turn (and any more of the same turn), or what it says.
func fw34Turn(task string, results []string) (call, args, say string, more [][2]string, ok bool) {
	last := ""
	if len(results) > 0 {
		last = results[len(results)-1]
	}
	switch {
	case task == "fw34-escalate": // one escalation, then what it answered
		if len(results) == 0 {
			return "up__escalate", `{"ticket":"T1","level":0}`, "", nil, true
		}
		return "", "", "escalate: " + last, nil, true
	case strings.HasPrefix(task, "fw34-transfer "): // "fw34-transfer FROM TO": one transfer, then what it answered
		f := strings.Fields(task)
		if len(results) == 0 {
			return "up__transfer", fmt.Sprintf(`{"from":%q,"to":%q}`, f[1], f[2]), "", nil, true
		}
		return "", "", "transfer: " + last, nil, true
	case task == "fw34-notes": // one turn: two notes on order 7, one on order 8; then what they answered
		if len(results) == 0 {
			return "up__note", `{"order":"7","text":"a"}`, "", [][2]string{{"up__note", `{"order":"7","text":"b"}`}, {"up__note", `{"order":"8","text":"c"}`}}, true
		}
		return "", "", "notes: " + strings.Join(results, " | "), nil, true
	case task == "fw34-spans": // one turn of two lookups, then the answer
		if len(results) == 0 {
			return "up__lookup", `{"q":"refund"}`, "", [][2]string{{"up__lookup", `{"q":"returns"}`}}, true
		}
		return "", "", "spans: " + strings.Join(results, " | "), nil, true
	}
	return "", "", "", nil, false
}

// fw34Frameworks are the frameworks of this file's tests: each on its
// defaults and the protocol it speaks first.
var fw34Frameworks = []string{"openai-agents", "ai-sdk", "langgraph"}

// fw34Desk is the desk upstream: escalate (a read, which escalates a
// ticket one level up through reach: a tool calling itself beneath
// itself), transfer (a write of account FROM, which, given TO, writes TO
// through reach from inside its own write), note (a write of an order),
// lookup (a read). Each call's begin and end is in its log.
type fw34Desk struct {
	mu     sync.Mutex
	reach  string      // reach's URL, set once it serves
	held   func() bool // for the notes: whether reach has all the notes of the turn
	log    []string
	change chan struct{} // closed and renewed at each entry of the log

	both    chan struct{} // closed when both transfers with a TO have begun
	begun   int
	release chan struct{} // closed when the test ends
}

// note appends an entry to the desk's log.
func (d *fw34Desk) note(entry string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log = append(d.log, entry)
	close(d.change)
	d.change = make(chan struct{})
}

// entries returns the desk's log.
func (d *fw34Desk) entries() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.log)
}

// until waits until ok holds of the log, or the test ends, or a minute
// passes (a guard against a hang, not a measure): it says whether ok held.
func (d *fw34Desk) until(ok func([]string) bool) bool {
	deadline := time.After(time.Minute)
	// ok may read more than the log (reach's frames, which change with no
	// entry here): look again now and then, not only when the log changes.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		d.mu.Lock()
		held, ch := ok(d.log), d.change
		d.mu.Unlock()
		if held {
			return true
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-d.release:
			return false
		case <-deadline:
			return false
		}
	}
}

// nested calls tool with args through reach's HTTP API as a call beneath
// the desk's own call (the frame reach sent it in _meta), and returns the
// result as text: its status, its error's code, message and suggestion,
// its data and its notes.
func (d *fw34Desk) nested(ctx context.Context, req *mcp.CallToolRequest, tool string, args map[string]any) (string, bool) {
	parent, _ := req.Params.Meta[link.MetaParent].(string)
	body, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"call_id": "nested", "tool": tool, "arguments": args}}})
	d.mu.Lock()
	base := d.reach
	d.mu.Unlock()
	hr, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/calls", bytes.NewReader(body))
	if err != nil {
		return err.Error(), true
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(link.HeaderParent, parent)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return err.Error(), true
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Results []struct {
			Status string          `json:"status"`
			Data   json.RawMessage `json:"data"`
			Notes  []string        `json:"notes"`
			Error  *struct {
				Code       string `json:"code"`
				Message    string `json:"message"`
				Suggestion string `json:"suggestion"`
			} `json:"error"`
		} `json:"results"`
	}
	if json.Unmarshal(b, &out) != nil || len(out.Results) != 1 {
		return fmt.Sprintf("reach answered %d: %s", resp.StatusCode, b), true
	}
	r := out.Results[0]
	text := r.Status
	if r.Error != nil {
		text += " " + r.Error.Code + ": " + r.Error.Message + " " + r.Error.Suggestion
	}
	if len(r.Data) > 0 {
		text += " " + string(r.Data)
	}
	for _, n := range r.Notes {
		text += " (" + n + ")"
	}
	return text, r.Status != "success"
}

func newFW34Desk(t *testing.T) (*fw34Desk, string) {
	t.Helper()
	d := &fw34Desk{change: make(chan struct{}), both: make(chan struct{}), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "desk", Version: "1"}, nil)
	read := &mcp.ToolAnnotations{ReadOnlyHint: true}
	no := false
	write := &mcp.ToolAnnotations{DestructiveHint: &no}
	result := func(text string, failed bool) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: failed}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "escalate", Description: "Escalate a ticket one level up.", Annotations: read},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Ticket string `json:"ticket"`
			Level  int    `json:"level"`
		}) (*mcp.CallToolResult, any, error) {
			d.note(fmt.Sprintf("escalate %s %d", in.Ticket, in.Level))
			if in.Level > 0 {
				return result(fmt.Sprintf("ticket %s handled at level %d", in.Ticket, in.Level), false), nil, nil
			}
			text, failed := d.nested(ctx, req, "up__escalate", map[string]any{"ticket": in.Ticket, "level": in.Level + 1})
			return result(fmt.Sprintf("ticket %s escalated; level %d answered: %s", in.Ticket, in.Level+1, text), failed), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "transfer", Description: "Move the balance of account from to account to.", Annotations: write},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			From string `json:"from"`
			To   string `json:"to,omitempty"`
		}) (*mcp.CallToolResult, any, error) {
			d.note("begin " + in.From)
			defer d.note("end " + in.From)
			if in.To == "" {
				return result("account "+in.From+" written", false), nil, nil
			}
			d.mu.Lock()
			if d.begun++; d.begun == 2 {
				close(d.both)
			}
			d.mu.Unlock()
			select { // each holds its account until the other holds its own
			case <-d.both:
			case <-d.release:
				return result("the test ended", true), nil, nil
			}
			text, failed := d.nested(ctx, req, "up__transfer", map[string]any{"from": in.To})
			return result(fmt.Sprintf("moved %s to %s; writing %s answered: %s", in.From, in.To, in.To, text), failed), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "note", Description: "Add a note to an order.", Annotations: write},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Order string `json:"order"`
			Text  string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			d.note("begin " + in.Order + in.Text)
			defer d.note("end " + in.Order + in.Text)
			// A note on order 7 holds it until the note on order 8 has
			// begun, which must not wait for it, and reach has all three
			// notes of the turn (held lets the test say so); the note on
			// order 8 waits until one on order 7 has begun.
			d.until(func(log []string) bool {
				begun := func(order string) bool {
					return slices.ContainsFunc(log, func(e string) bool { return strings.HasPrefix(e, "begin "+order) })
				}
				if in.Order == "8" {
					return begun("7")
				}
				return begun("8") && (d.held == nil || d.held())
			})
			return result("order "+in.Order+" noted "+in.Text, false), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look q up in the knowledge base.", Annotations: read},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Q string `json:"q"`
		}) (*mcp.CallToolResult, any, error) {
			d.note("lookup " + in.Q)
			return result("found nothing new about "+in.Q, false), nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(d.release) }) // before srv.Close
	return d, srv.URL
}

// newFW34Shop is a gateway with the desk upstream, the scripted model and
// extra configuration.
func newFW34Shop(t *testing.T, extra string) (*shop, *fw34Desk) {
	t.Helper()
	d, upURL := newFW34Desk(t)
	s := shopAt(t, upURL, extra)
	d.mu.Lock() // the desk's handlers read it (they run on their own goroutines)
	d.reach = s.url
	d.mu.Unlock()
	return s, d
}

// fw34Frames returns the tool frames of name in g's requests.
func fw34Frames(g *Gateway, name string) []*reach.Frame {
	var out []*reach.Frame
	for _, q := range g.rt.Requests() {
		for _, f := range q.Frames() {
			if f.Kind == reach.ToolFrame && f.Name == name {
				out = append(out, f)
			}
		}
	}
	return out
}

// TestFW34ContractModes (G3): the desk's escalate, a tool on the default
// contract (non_reentrant), calls itself beneath itself through reach,
// as a tool that is an agent does when it hands a ticket on to itself.
// OpenAI Agents, the AI SDK and LangGraph run the model's one
// escalation. With on_violation refuse (the default) the nested call is
// refused as a re-entry, before the desk sees it: the model reads the
// refusal, passed up by the desk. With warn the nested call runs, and
// its result carries the warning; with allow it runs without one. Reach
// records the re-entry (the frame's CycleTo, the graph's edge back to
// the outer call) under refuse and warn, not under allow.
func TestFW34ContractModes(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai",
		"@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai")
	for _, mode := range []string{"", "refuse", "warn", "allow"} {
		for _, fw := range fw34Frameworks {
			name := mode
			if name == "" {
				name = "default"
			}
			t.Run(name+"/"+fw, func(t *testing.T) {
				extra := ""
				if mode != "" {
					extra = "tools:\n  up__escalate: {on_violation: " + mode + "}\n"
				}
				s, d := newFW34Shop(t, extra)
				r := runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", "fw34-escalate", nil)
				t.Logf("the model read: %s", clip(r.Text, 800))
				if !r.OK || !strings.HasPrefix(r.Text, "escalate: ") || !strings.Contains(r.Text, "ticket T1 escalated; level 1 answered: ") {
					t.Fatalf("the run: %+v; want the model's answer with the escalation's result", r)
				}
				log := strings.Join(d.entries(), ", ")
				frames := fw34Frames(s.g, "up__escalate")
				if len(frames) != 2 {
					logFrames(t, s.g)
					t.Fatalf("reach saw %d calls of up__escalate, want 2 (the model's, the desk's beneath it)", len(frames))
				}
				outer, inner := frames[0], frames[1]
				if inner.Parent != outer {
					outer, inner = inner, outer
				}
				if inner.Parent != outer || outer.Request != inner.Request {
					t.Errorf("the desk's call is not beneath the model's in one request: parents %v, %v", outer.Parent, inner.Parent)
				}
				switch mode {
				case "", "refuse":
					if !strings.Contains(r.Text, "refused reentrancy: up__escalate is already running on your call stack") || !strings.Contains(r.Text, "return to the running up__escalate call") {
						t.Errorf("the model read %q; want the nested call refused as a re-entry of up__escalate, with what to do", r.Text)
					}
					if log != "escalate T1 0" {
						t.Errorf("the desk ran %s; want the model's escalation only", log)
					}
					if inner.State() != reach.Refused || inner.CycleTo() != outer {
						t.Errorf("reach's nested call: %v, re-entering %v; want refused, re-entering the model's call", inner.State(), inner.CycleTo())
					}
				case "warn":
					if !strings.Contains(r.Text, "success") || !strings.Contains(r.Text, "handled at level 1") || !strings.Contains(r.Text, "(warning: ") {
						t.Errorf("the model read %q; want the nested call run, with reach's warning", r.Text)
					}
					if log != "escalate T1 0, escalate T1 1" {
						t.Errorf("the desk ran %s; want both escalations", log)
					}
					if inner.State() != reach.Completed || inner.CycleTo() != outer {
						t.Errorf("reach's nested call: %v, re-entering %v; want completed, its re-entry recorded", inner.State(), inner.CycleTo())
					}
				case "allow":
					if !strings.Contains(r.Text, "success") || !strings.Contains(r.Text, "handled at level 1") || strings.Contains(r.Text, "warning") {
						t.Errorf("the model read %q; want the nested call run, without a warning", r.Text)
					}
					if log != "escalate T1 0, escalate T1 1" {
						t.Errorf("the desk ran %s; want both escalations", log)
					}
					if inner.State() != reach.Completed || inner.CycleTo() != nil {
						t.Errorf("reach's nested call: %v, re-entering %v; want completed, no check made", inner.State(), inner.CycleTo())
					}
				}
			})
		}
	}
}

// TestFW34Deadlock (S3): two runs of one framework, each a request of its
// own, each move an account's balance to the other's account with the
// desk's transfer, a write of account FROM that writes TO through reach
// from inside its own write (as a service in front of other tools does).
// Each holds its account when it writes the other's: reach serializes
// writes to one entity, so each nested write waits for the other run's
// write, a wait-for cycle, which reach breaks by refusing one nested
// write as a deadlock, at once and before the desk sees it. That run's
// model reads the refusal (passed up by the desk) with what to do; the
// other run's nested write waits until the refused run's write of that
// account ends, then runs, and its model reads the success. The desk
// never has two writes of one account in flight.
func TestFW34Deadlock(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai",
		"@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai")
	for _, fw := range fw34Frameworks {
		t.Run(fw, func(t *testing.T) {
			s, d := newFW34Shop(t, "tools:\n  up__transfer: {access: write, reentrancy: reentrant, writes: [\"acct:{from}\"]}\n")
			tasks := []string{"fw34-transfer x y", "fw34-transfer y x"}
			runs := make([]agentRun, len(tasks))
			var wg sync.WaitGroup
			for i, task := range tasks {
				wg.Go(func() { runs[i] = runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", task, nil) })
			}
			wg.Wait()
			log := d.entries()
			t.Logf("the desk ran: %s", strings.Join(log, ", "))
			refused, moved := -1, -1
			for i, r := range runs {
				t.Logf("%s: the model read: %s", tasks[i], clip(r.Text, 600))
				switch {
				case !r.OK || !strings.HasPrefix(r.Text, "transfer: "):
					t.Errorf("%s: the run %+v; want the model's answer", tasks[i], r)
				case strings.Contains(r.Text, "would deadlock"):
					refused = i
				case strings.Contains(r.Text, "answered: success"):
					moved = i
				}
			}
			if refused < 0 || moved < 0 {
				t.Fatalf("want one run refused as a deadlock, the other's transfer run whole")
			}
			from, to := strings.Fields(tasks[refused])[1], strings.Fields(tasks[refused])[2]
			if r := runs[refused].Text; !strings.Contains(r, "deadlock refused") && !strings.Contains(r, "refused deadlock") ||
				!strings.Contains(r, "Writing acct "+to+" would deadlock") || !strings.Contains(r, "Finish or undo what this request holds") {
				t.Errorf("the refused run's model read %q; want the deadlock's refusal of writing acct %s, with what to do", r, to)
			}
			// The desk: both transfers, and the moved run's nested write of
			// the refused run's account, after that run's write of it ended;
			// never two writes of one account at once.
			for _, acct := range []string{"x", "y"} {
				n := 0
				for _, e := range log {
					if e == "begin "+acct {
						n++
					}
					if e == "end "+acct {
						n--
					}
					if n > 1 {
						t.Errorf("the desk had two writes of account %s in flight: %v", acct, log)
						break
					}
				}
			}
			if got := fmt.Sprint(len(slices.DeleteFunc(slices.Clone(log), func(e string) bool { return !strings.HasPrefix(e, "begin ") }))); got != "3" {
				t.Errorf("the desk began %s writes, want 3 (two transfers, one nested write)", got)
			}
			begins := 0
			for _, e := range log[max(slices.Index(log, "end "+from), 0):] {
				if e == "begin "+from {
					begins++
				}
			}
			if !slices.Contains(log, "end "+from) || begins != 1 {
				t.Errorf("the nested write of account %s began before the refused run's write of it ended: %v", from, log)
			}
			// Reach: the refused write is the refused run's nested call,
			// beneath its transfer, in its own request.
			var dead []*reach.Frame
			for _, f := range fw34Frames(s.g, "up__transfer") {
				if e := f.Err(); e != nil && e.Code == "deadlock" {
					dead = append(dead, f)
				}
			}
			if len(dead) != 1 || dead[0].State() != reach.Refused || dead[0].Parent == nil || dead[0].Parent.Name != "up__transfer" ||
				dead[0].Parent.Request != dead[0].Request || !strings.Contains(string(dead[0].Args), `"`+to+`"`) {
				logFrames(t, s.g)
				t.Errorf("reach's deadlock refusals: %d; want one, of a nested write of acct %s beneath its run's transfer", len(dead), to)
			}
		})
	}
}

// TestFW34Spans (G5): OpenAI Agents, the AI SDK and LangGraph each run a
// model turn that asks for two lookups at once, then a turn that answers,
// through reach exporting its graph as OpenTelemetry spans over OTLP/HTTP
// (decoded with the official protobuf types). Each frame of the run's
// request is one span, of one trace, whose parent span is the frame's
// parent: each lookup under the model turn that chose it, each model turn
// under the request's root, with the GenAI semantic conventions'
// operation (chat, execute_tool) and the tool's name.
func TestFW34Spans(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai",
		"@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // the SDK's batch delay: spans within 50 ms of their end, not 5 s
	for _, fw := range fw34Frameworks {
		t.Run(fw, func(t *testing.T) {
			collector, exported := otlpCollector(t)
			s, d := newFW34Shop(t, "telemetry: {otlp_endpoint: "+collector.URL+"}\n")
			r := runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", "fw34-spans", nil)
			if want := "spans: found nothing new about refund | found nothing new about returns"; !r.OK || r.Text != want && r.Text != "spans: found nothing new about returns | found nothing new about refund" {
				t.Fatalf("the run: %+v; want %q", r, want)
			}
			if got := d.entries(); len(got) != 2 {
				t.Errorf("the desk ran %v, want two lookups", got)
			}
			reqs := s.g.rt.Requests()
			if len(reqs) != 1 {
				t.Fatalf("the run is in %d requests, want 1", len(reqs))
			}
			req := reqs[0]
			frames := req.Frames()
			if len(frames) != 4 {
				logFrames(t, s.g)
				t.Fatalf("reach's graph has %d frames, want 4 (two model turns, two lookups)", len(frames))
			}
			// The request's root span ends with the request: its idle gap
			// or, here, the gateway's close, which exports what is left.
			if err := s.g.Close(); err != nil {
				t.Fatal(err)
			}
			// Wait (a guard against a hang, not a measure) for a span of
			// each frame and the root.
			spans := map[string]*tracev1.Span{}
			var root *tracev1.Span
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				clear(spans)
				root = nil
				for _, sp := range exported() {
					spans[hex.EncodeToString(sp.SpanId)] = sp
					if len(sp.ParentSpanId) == 0 {
						root = sp
					}
				}
				if root != nil && !slices.ContainsFunc(frames, func(f *reach.Frame) bool { return spans[f.ID.String()] == nil }) {
					break
				}
				if time.Now().After(deadline) {
					for _, sp := range spans {
						t.Logf("span %s %s %x under %x", sp.Name, sp.Kind, sp.SpanId, sp.ParentSpanId)
					}
					t.Fatalf("the spans of the run's frames and its root did not all arrive: %d spans, root %v", len(spans), root != nil)
				}
			}
			attr := func(sp *tracev1.Span, key string) string {
				for _, a := range sp.Attributes {
					if a.Key == key {
						return a.Value.GetStringValue()
					}
				}
				return ""
			}
			if !strings.HasPrefix(root.Name, "invoke_agent") || attr(root, "reach.request") != req.ID() {
				t.Errorf("the root span is %q of request %q; want invoke_agent, of request %s", root.Name, attr(root, "reach.request"), req.ID())
			}
			for id, sp := range spans {
				if !bytes.Equal(sp.TraceId, root.TraceId) {
					t.Errorf("span %s (%s) is of trace %x, the root's of %x", id, sp.Name, sp.TraceId, root.TraceId)
				}
			}
			route := modelPath(fw, "")
			for _, f := range frames {
				sp := spans[f.ID.String()]
				parent := hex.EncodeToString(sp.ParentSpanId)
				switch f.Kind {
				case reach.ModelFrame:
					// The model turn's span is under the span of the HTTP call
					// that came in on the model route, itself under the root.
					in := spans[parent]
					if in == nil || in.Kind != tracev1.Span_SPAN_KIND_SERVER || attr(in, "http.route") != route || !bytes.Equal(in.ParentSpanId, root.SpanId) {
						t.Errorf("model turn %s's span is under %s (%v); want under the SERVER span of %s, under the root", f.ID, parent, in, route)
					}
					if attr(sp, "gen_ai.operation.name") != "chat" || attr(sp, "gen_ai.request.model") != "scripted" || sp.Kind != tracev1.Span_SPAN_KIND_CLIENT {
						t.Errorf("model turn %s's span: %s %s, %v; want a chat CLIENT span of the model scripted", f.ID, sp.Name, sp.Kind, sp.Attributes)
					}
				case reach.ToolFrame:
					if f.Parent == nil || f.Parent.Kind != reach.ModelFrame || parent != f.Parent.ID.String() {
						t.Errorf("lookup %s's span is under %s; want under the model turn that chose it (%v)", f.ID, parent, f.Parent)
					}
					if attr(sp, "gen_ai.operation.name") != "execute_tool" || attr(sp, "gen_ai.tool.name") != "up__lookup" || attr(sp, "gen_ai.tool.call.id") == "" {
						t.Errorf("lookup %s's span: %s, %v; want execute_tool of up__lookup with the model's call id", f.ID, sp.Name, sp.Attributes)
					}
				}
			}
			if fs := slices.DeleteFunc(slices.Clone(frames), func(f *reach.Frame) bool { return f.Kind != reach.ToolFrame }); len(fs) == 2 && fs[0].Parent != fs[1].Parent {
				t.Errorf("the two lookups are under different model turns (%v, %v); want the turn that asked for both", fs[0].Parent, fs[1].Parent)
			}
		})
	}
}

// TestFW34WritesOfOneTurn (R4, S3): OpenAI Agents, the AI SDK and
// LangGraph each make the three calls of one model turn at once: two
// notes on order 7 and one on order 8, writes of those orders. Reach runs
// the two writes of order 7 one after the other, and the write of order
// 8 beside them: the desk never has two notes of order 7 in flight, and
// has the note of order 8 in flight while one of order 7 is (the first
// note of order 7 holds until reach has all three calls and the note of
// order 8 has begun). The model reads the three results, all run.
func TestFW34WritesOfOneTurn(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai", "ai", "@ai-sdk/mcp", "@ai-sdk/openai",
		"@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai")
	for _, fw := range fw34Frameworks {
		t.Run(fw, func(t *testing.T) {
			s, d := newFW34Shop(t, "tools:\n  up__note: {access: write, writes: [\"order:{order}\"]}\n")
			d.mu.Lock() // until reads it under d.mu
			d.held = func() bool { return len(fw34Frames(s.g, "up__note")) == 3 }
			d.mu.Unlock()
			r := runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", "fw34-notes", nil)
			log := d.entries()
			t.Logf("the model read: %s; the desk ran: %s", clip(r.Text, 600), strings.Join(log, ", "))
			if !r.OK || !strings.HasPrefix(r.Text, "notes: ") {
				t.Fatalf("the run: %+v; want the model's answer", r)
			}
			got := strings.Split(strings.TrimPrefix(r.Text, "notes: "), " | ")
			slices.Sort(got)
			if want := []string{"order 7 noted a", "order 7 noted b", "order 8 noted c"}; !slices.Equal(got, want) {
				t.Errorf("the model read %q; want %q", got, want)
			}
			seven, eight, most, beside := 0, 0, 0, false
			for _, e := range log {
				switch {
				case strings.HasPrefix(e, "begin 7"):
					seven++
				case strings.HasPrefix(e, "end 7"):
					seven--
				case e == "begin 8c":
					eight++
				case e == "end 8c":
					eight--
				}
				most = max(most, seven)
				beside = beside || seven > 0 && eight > 0
			}
			if most != 1 || len(log) != 6 {
				t.Errorf("the desk ran %v; want the two notes of order 7 one after the other", log)
			}
			if !beside {
				t.Errorf("the desk ran %v; want the note of order 8 begun while one of order 7 was in flight", log)
			}
			frames := fw34Frames(s.g, "up__note")
			if len(frames) != 3 || frames[0].Parent == nil || frames[0].Parent.Kind != reach.ModelFrame ||
				slices.ContainsFunc(frames, func(f *reach.Frame) bool { return f.Parent != frames[0].Parent || f.State() != reach.Completed }) {
				logFrames(t, s.g)
				t.Errorf("reach's notes: %d; want three, completed, under the one model turn", len(frames))
			}
		})
	}
}

// TestFW34DependentCallsOnNPMServer (R4): an envelope of three calls to
// server-memory from npm (over stdio, behind reach): the second names,
// with a $ref, the entity the first created; the third reads the graph
// with a $ref to the second's result. Reach runs them in order: the
// server, which refuses observations of an entity it does not have,
// takes the second, and the third reads both.
func TestFW34DependentCallsOnNPMServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	memory := filepath.Join(cache, "node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	cfg, err := config.Parse([]byte(fmt.Sprintf("upstreams:\n  - name: memory\n    command: [node, %s]\n    env: {MEMORY_FILE_PATH: %s}\n",
		memory, filepath.Join(t.TempDir(), "memory.jsonl"))), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	code, out := do(t, "POST", srv.URL+"/v1/calls", `{"tool_calls":[
		{"call_id":"c1","tool":"memory__create_entities","arguments":{"entities":[{"name":"Ada","entityType":"person","observations":["born 1815"]}]}},
		{"call_id":"c2","tool":"memory__add_observations","arguments":{"observations":[{"entityName":{"$ref":"c1.entities.0.name"},"contents":["wrote the first program"]}]}},
		{"call_id":"c3","tool":"memory__search_nodes","arguments":{"query":{"$ref":"c2.results.0.entityName"}}}]}`, nil)
	b, _ := json.Marshal(out)
	t.Logf("reach answered %d: %s", code, b)
	for i := range 3 {
		if st := path(out, "results", i, "status"); code != 200 || st != "success" {
			t.Fatalf("call %d: %v; want all three run: %s", i+1, st, b)
		}
	}
	if o := fmt.Sprint(path(out, "results", 2, "data", "entities", 0, "observations")); o != "[born 1815 wrote the first program]" {
		t.Errorf("the search found observations %s; want both, the second added by the call that named the entity the first created", o)
	}
	// Reach's frames: each call began after the one it consumes ended,
	// with the value it named in its arguments.
	var frames []*reach.Frame
	for _, name := range []string{"memory__create_entities", "memory__add_observations", "memory__search_nodes"} {
		fs := fw34Frames(g, name)
		if len(fs) != 1 {
			t.Fatalf("reach saw %d calls of %s, want 1", len(fs), name)
		}
		frames = append(frames, fs[0])
	}
	for i, want := range []string{`"entityName":"Ada"`, `"query":"Ada"`} {
		f, before := frames[i+1], frames[i]
		if !strings.Contains(string(f.Args), want) || f.Started.Before(before.Ended()) {
			t.Errorf("%s: arguments %s, began %v, %s ended %v; want %s, begun after", f.Name, f.Args, f.Started, before.Name, before.Ended(), want)
		}
	}
}
