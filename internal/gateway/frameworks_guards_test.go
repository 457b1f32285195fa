package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Reach's guards through real frameworks on their defaults: arguments
// checked against the tool's schema (R2), a timed-out read retried and a
// timed-out write not retried blindly (R6), the rate limits (R8) and a
// short cycle at the outer level (L2). Each test says what the framework,
// the scripted model (shopModel, its tasks in guardTurn) and reach each
// saw.

// guardFrameworks are the frameworks these tests run, each on its
// defaults: OpenAI Agents and the AI SDK (the Responses API; the MCP
// result handed to the model as it is) and LangGraph (chat completions;
// its ToolNode turns a tool's error into a message to the model).
var guardFrameworks = []string{"openai-agents", "ai-sdk", "langgraph"}

// guardUpstream is the MCP server of these tests: two reads that answer
// the same each time (lookup, stock), a read and two writes whose first
// call hangs (flaky, charge, charge_keyed: reach's attempt timeout ends
// it), each call's idempotency key as the upstream got it.
type guardUpstream struct {
	mu      sync.Mutex
	calls   map[string]int
	keys    map[string][]string // tool -> the _meta idempotency key of each call
	release chan struct{}       // closed when the test ends: a hung call whose cancel never came ends
}

func newGuardUpstream(t *testing.T) (*guardUpstream, string) {
	t.Helper()
	u := &guardUpstream{calls: map[string]int{}, keys: map[string][]string{}, release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "guards", Version: "1"}, nil)
	read := &mcp.ToolAnnotations{ReadOnlyHint: true}
	no := false
	write := &mcp.ToolAnnotations{DestructiveHint: &no}
	count := func(tool string, req *mcp.CallToolRequest) int {
		key, _ := req.Params.Meta[link.MetaIdempotencyKey].(string)
		u.mu.Lock()
		defer u.mu.Unlock()
		u.calls[tool]++
		u.keys[tool] = append(u.keys[tool], key)
		return u.calls[tool]
	}
	// hang holds the first call of a tool until its cancel (reach's
	// attempt timeout) or the test's end.
	hang := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-u.release:
			return fmt.Errorf("the test ended")
		}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look q up in the knowledge base.", Annotations: read},
		func(_ context.Context, req *mcp.CallToolRequest, in struct {
			Q string `json:"q"`
		}) (*mcp.CallToolResult, any, error) {
			count("lookup", req)
			return shopText("found nothing new about " + in.Q), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stock", Description: "The stock of a product.", Annotations: read},
		func(_ context.Context, req *mcp.CallToolRequest, in struct {
			SKU string `json:"sku"`
		}) (*mcp.CallToolResult, any, error) {
			count("stock", req)
			return shopText("sku " + in.SKU + ": 4 in stock"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "stuck", Description: "Ask the old warehouse.", Annotations: read},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Q string `json:"q"`
		}) (*mcp.CallToolResult, any, error) {
			count("stuck", req)
			return nil, nil, hang(ctx)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "flaky", Description: "Ask the warehouse.", Annotations: read},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Q string `json:"q"`
		}) (*mcp.CallToolResult, any, error) {
			if count("flaky", req) == 1 {
				return nil, nil, hang(ctx)
			}
			return shopText("warehouse: " + in.Q + " ok"), nil, nil
		})
	for _, name := range []string{"charge", "charge_keyed"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Charge an order.", Annotations: write},
			func(ctx context.Context, req *mcp.CallToolRequest, in struct {
				Order string `json:"order"`
			}) (*mcp.CallToolResult, any, error) {
				if count(name, req) == 1 {
					return nil, nil, hang(ctx)
				}
				return shopText("charged order " + in.Order), nil, nil
			})
	}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{PropagateRequestCancellation: true}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(u.release) }) // before srv.Close (cleanups run last first)
	return u, srv.URL
}

func (u *guardUpstream) called(tool string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[tool]
}

func (u *guardUpstream) keysOf(tool string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.keys[tool])
}

// guardShop is one gateway in front of the guard upstream and the
// scripted model.
type guardShop struct {
	g     *Gateway
	url   string
	up    *guardUpstream
	model *shopModel
	wire  *wire
}

func newGuardShop(t *testing.T, extra string) *guardShop {
	t.Helper()
	up, upURL := newGuardUpstream(t)
	s := shopAt(t, upURL, extra)
	return &guardShop{g: s.g, url: s.url, up: up, model: s.model, wire: s.wire}
}

// toolCalls is how many MCP tools/call the framework sent reach.
func (s *guardShop) toolCalls() int {
	s.wire.mu.Lock()
	defer s.wire.mu.Unlock()
	n := 0
	for _, c := range s.wire.protocols {
		n += c
	}
	return n
}

// frames are the tool calls reach saw, in the order they began: each
// tool's name, its state and its error's code.
func (s *guardShop) frames() []string {
	var out []string
	for _, r := range s.g.rt.Requests() {
		for _, f := range r.Frames() {
			if f.Kind != reach.ToolFrame {
				continue
			}
			code := ""
			if e := f.Err(); e != nil {
				code = " " + e.Code
			}
			out = append(out, fmt.Sprintf("%s %v%s", f.Name, f.State(), code))
		}
	}
	return out
}

// allOK checks that every model call was answered 200 and counts them.
func (s *guardShop) allOK(t *testing.T, want int) {
	t.Helper()
	st := s.wire.statuses()
	if len(st) != want || slices.ContainsFunc(st, func(c int) bool { return c != http.StatusOK }) {
		t.Errorf("model calls answered %v, want %d, all 200", st, want)
	}
}

// guardTurn plays the tasks of these tests (shopModel's default case);
// ok is false for a task of another test.
func guardTurn(task string, results []string) (call, args, say string, ok bool) {
	last := ""
	if len(results) > 0 {
		last = results[len(results)-1]
	}
	switch task {
	case "fw33a-args": // a wrong type, then a missing field, then the call as the schema wants it
		switch len(results) {
		case 0:
			return "up__lookup", `{"q":7}`, "", true
		case 1:
			return "up__lookup", `{}`, "", true
		case 2:
			return "up__lookup", `{"q":"refund policy"}`, "", true
		}
		return "", "", "args: " + strings.Join(results, " | "), true
	case "fw33a-flaky", "fw33a-stuck", "fw33a-charge", "fw33a-charge_keyed": // one call, then what it read
		tool, _ := strings.CutPrefix(task, "fw33a-")
		if len(results) == 0 {
			arg := `{"order":"1001"}`
			if tool == "flaky" || tool == "stuck" {
				arg = `{"q":"stock"}`
			}
			return "up__" + tool, arg, "", true
		}
		return "", "", tool + ": " + last, true
	case "fw33a-rate": // a new lookup each turn, until one is refused
		if last != "" && !strings.HasPrefix(last, "found nothing new") {
			return "", "", "rate: " + last, true
		}
		return "up__lookup", fmt.Sprintf(`{"q":"topic %d"}`, len(results)), "", true
	case "fw33a-cycle": // A, B, A, B ... each answering the same, until one is refused
		if last != "" && !strings.HasPrefix(last, "found nothing new") && !strings.HasPrefix(last, "sku ") {
			return "", "", "I stop here: " + last, true
		}
		if len(results)%2 == 0 {
			return "up__lookup", `{"q":"refund policy"}`, "", true
		}
		return "up__stock", `{"sku":"A1"}`, "", true
	}
	return "", "", "", false
}

// runGuard runs fw on task against s.
func runGuard(t *testing.T, dir, node, fw string, s *guardShop, task string) agentRun {
	t.Helper()
	r := runAgent(t, dir, node, fw, "", "", s.url+"/mcp", s.url+"/v1", task, nil)
	t.Logf("%s %s: the run %+v; reach saw %v", fw, task, r, s.frames())
	return r
}

// TestFrameworksArgumentCheck (R2): a model's call with a field of the
// wrong type, then one without a required field, are each refused
// before the upstream sees them, as a result with isError whose text
// names the field and what is wrong; the framework hands it to the
// model, whose corrected call runs: the upstream runs once.
func TestFrameworksArgumentCheck(t *testing.T) {
	dir, node := frameworksCache(t)
	for _, fw := range guardFrameworks {
		t.Run(fw, func(t *testing.T) {
			s := newGuardShop(t, "")
			r := runGuard(t, dir, node, fw, s, "fw33a-args")
			if !r.OK || !strings.HasPrefix(r.Text, "args: ") {
				t.Fatalf("the run: %+v, want the model's answer", r)
			}
			read := strings.Split(strings.TrimPrefix(r.Text, "args: "), " | ")
			if len(read) != 3 {
				t.Fatalf("the model read %d results, want 3: %q", len(read), r.Text)
			}
			t.Logf("the model read: %q", read)
			if n := s.up.called("lookup"); n != 1 {
				t.Errorf("the upstream ran %d lookups, want 1 (the corrected call)", n)
			}
			if !strings.HasPrefix(read[2], "found nothing new about refund policy") {
				t.Errorf("the corrected call's result: %q", read[2])
			}
			s.allOK(t, 4)
			if fw == "langgraph" {
				// LangGraph checks a call against the tool's schema itself
				// (LangChain's tool, before it calls MCP) and its ToolNode
				// hands the model its own words, which name no field: reach
				// sees the corrected call alone.
				for _, got := range read[:2] {
					if !strings.Contains(got, "did not match expected schema") {
						t.Errorf("the model read %q, want LangGraph's own refusal", got)
					}
				}
				if f := s.frames(); !slices.Equal(f, []string{"up__lookup completed"}) {
					t.Errorf("reach saw %v, want the corrected call alone", f)
				}
				return
			}
			for i, want := range []string{"- /q: got number, want string", "- missing property 'q' (add the missing field)"} {
				if !strings.Contains(read[i], want) || !strings.Contains(read[i], "Fix the fields listed and call it again.") {
					t.Errorf("call %d: the model read %q, want it to say %q and what to do", i+1, read[i], want)
				}
			}
			if f := s.frames(); !slices.Equal(f, []string{"up__lookup refused invalid_arguments", "up__lookup refused invalid_arguments", "up__lookup completed"}) {
				t.Errorf("reach saw %v, want two calls refused for their arguments and the corrected one", f)
			}
			if n := s.toolCalls(); n != 3 {
				t.Errorf("the framework sent %d tools/call, want 3 (no retry of a refusal)", n)
			}
		})
	}
}

// TestFrameworksToolTimeouts (R6): a read whose first attempt times out
// is retried by reach, with backoff, and succeeds: the framework sent one
// call and the model read its result. A write that times out is not
// retried blindly: without an idempotency key its tool honours, the
// model reads that it was not retried and to check whether it took
// effect (the upstream ran it once); with one (idempotent), reach retries
// it under the same key. A read that times out on every attempt fails
// after the last with "hand this to a human". No framework retries
// reach's answer.
func TestFrameworksToolTimeouts(t *testing.T) {
	dir, node := frameworksCache(t)
	const tools = "tools:\n" +
		"  up__flaky: {timeout: 1s, retry: {attempts: 3, base: 10ms, max: 40ms}}\n" +
		"  up__stuck: {timeout: 1s, retry: {attempts: 3, base: 10ms, max: 40ms}}\n" +
		"  up__charge: {access: write, timeout: 1s, retry: {attempts: 3, base: 10ms, max: 40ms}}\n" +
		"  up__charge_keyed: {access: write, idempotent: true, timeout: 1s, retry: {attempts: 3, base: 10ms, max: 40ms}}\n"
	for _, fw := range guardFrameworks {
		t.Run(fw, func(t *testing.T) {
			for _, c := range []struct {
				tool     string
				upstream int      // calls the upstream got
				want     []string // what the model read
				state    string
			}{
				{"flaky", 2, []string{"flaky: warehouse: stock ok"}, "up__flaky completed"},
				{"stuck", 3, []string{"up__stuck did not answer within 1s on any of 3 attempts", "It failed 3 times in a row; hand this to a human or try a different approach."}, "up__stuck failed timeout"},
				{"charge", 1, []string{"up__charge did not answer within 1s.", "not retried automatically", "check whether it took effect"}, "up__charge failed timeout"},
				{"charge_keyed", 2, []string{"charge_keyed: charged order 1001"}, "up__charge_keyed completed"},
			} {
				t.Run(c.tool, func(t *testing.T) {
					s := newGuardShop(t, tools)
					r := runGuard(t, dir, node, fw, s, "fw33a-"+c.tool)
					if !r.OK {
						t.Fatalf("the run: %+v, want the model's answer", r)
					}
					for _, w := range c.want {
						if !strings.Contains(r.Text, w) {
							t.Errorf("the model read %q, want it to say %q", r.Text, w)
						}
					}
					if n := s.up.called(c.tool); n != c.upstream {
						t.Errorf("the upstream got %d calls, want %d", n, c.upstream)
					}
					if keys := s.up.keysOf(c.tool); c.tool == "charge_keyed" && (keys[0] == "" || !slices.Equal(keys, []string{keys[0], keys[0]})) {
						t.Errorf("the keyed write's calls upstream had the keys %q, want one key twice", keys)
					}
					if n := s.toolCalls(); n != 1 {
						t.Errorf("the framework sent %d tools/call, want 1", n)
					}
					if f := s.frames(); !slices.Equal(f, []string{c.state}) {
						t.Errorf("reach saw %v, want [%s]", f, c.state)
					}
					s.allOK(t, 2)
				})
			}
		})
	}
}

// TestFrameworksRateLimits (R8): past its principal's bucket (a burst of
// two, refilled once in 1000 s) a framework's tool call is refused as a
// result with isError saying which limit, to wait and when a retry may
// pass; the framework hands it to the model and does not retry it (three
// tools/call, two run upstream), and the run ends with the model's
// answer. The global bucket refuses so too, naming itself.
func TestFrameworksRateLimits(t *testing.T) {
	dir, node := frameworksCache(t)
	for _, fw := range guardFrameworks {
		for _, c := range []struct{ name, config, scope string }{
			{"principal", "rate_limit: {per_principal: 0.001, per_principal_burst: 2}\n", "per-principal"},
			{"global", "rate_limit: {per_second: 0.001, burst: 2}\n", "global"},
		} {
			t.Run(fw+"/"+c.name, func(t *testing.T) {
				s := newGuardShop(t, c.config)
				r := runGuard(t, dir, node, fw, s, "fw33a-rate")
				if !r.OK || !strings.Contains(r.Text, "rate: ") {
					t.Fatalf("the run: %+v, want the model's answer", r)
				}
				for _, w := range []string{"Too many calls (" + c.scope + " rate limit).", "Wait and retry, or do fewer calls.", "Retry after "} {
					if !strings.Contains(r.Text, w) {
						t.Errorf("the model read %q, want it to say %q", r.Text, w)
					}
				}
				if n := s.up.called("lookup"); n != 2 {
					t.Errorf("the upstream ran %d lookups, want 2 (the burst)", n)
				}
				if n := s.toolCalls(); n != 3 {
					t.Errorf("the framework sent %d tools/call, want 3 (no retry of the refusal)", n)
				}
				if f := s.frames(); !slices.Equal(f, []string{"up__lookup completed", "up__lookup completed", "up__lookup refused rate_limited"}) {
					t.Errorf("reach saw %v, want two lookups and one refused for the rate", f)
				}
				s.allOK(t, 4)
			})
		}
	}
}

// TestFrameworksShortCycle (L2): a model that goes round two reads (A,
// B, A, B ...) each answering as it did the round before learns nothing
// new: reach refuses the call that would go round again, the framework
// hands the model the refusal, and the run ends with the model's answer,
// which quotes it.
func TestFrameworksShortCycle(t *testing.T) {
	dir, node := frameworksCache(t)
	for _, fw := range guardFrameworks {
		t.Run(fw, func(t *testing.T) {
			s := newGuardShop(t, "")
			r := runGuard(t, dir, node, fw, s, "fw33a-cycle")
			if !r.OK || !strings.Contains(r.Text, "I stop here: ") {
				t.Fatalf("the run: %+v, want the model's answer", r)
			}
			if f := s.frames(); !slices.Equal(f, []string{"up__lookup completed", "up__stock completed", "up__lookup completed", "up__stock completed", "up__lookup refused loop_short_cycle"}) {
				t.Errorf("reach saw %v, want two rounds and the third refused as a short cycle", f)
			}
			for _, w := range []string{"went 2 times round the same cycle of calls (up__lookup -> up__stock)", "Break the cycle: use the results you already have"} {
				if !strings.Contains(r.Text, w) {
					t.Errorf("the model read %q, want it to say %q", r.Text, w)
				}
			}
			if a, b := s.up.called("lookup"), s.up.called("stock"); a != 2 || b != 2 {
				t.Errorf("the upstream ran %d lookups and %d stock reads, want 2 and 2", a, b)
			}
			if n := s.toolCalls(); n != 5 {
				t.Errorf("the framework sent %d tools/call, want 5", n)
			}
			s.allOK(t, 6)
		})
	}
}
