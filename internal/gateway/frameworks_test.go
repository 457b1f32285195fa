package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Thirteen agent frameworks from npm — OpenAI Agents, LangGraph, the AI SDK,
// Mastra, Genkit, VoltAgent, KaibanJS, LlamaIndex, BeeAI, Google's ADK,
// Strands Agents, LangChain's createAgent and Ax —
// on their default settings (KaibanJS, LlamaIndex, BeeAI, ADK and Ax with the
// hooks, settings and model class of their pages in docs/frameworks), their MCP tools and their model pointed at
// reach (testdata/frameworks/agent.mjs), with a scripted model behind
// reach's model proxy and a shop upstream behind its MCP server.

// frameworksCache finds the folder scripts/frameworks-deps.sh installs
// into and the Node 22 in it; without them the test skips, saying why, or
// fails under REACH_CI (make test), so that CI never passes by skipping.
func frameworksCache(t *testing.T) (dir, node string) {
	t.Helper()
	dir, node = frameworksCacheOf(t, "@openai/agents", "@langchain/langgraph", "@langchain/mcp-adapters", "@langchain/openai", "ai", "@ai-sdk/mcp",
		"@ai-sdk/openai", "@modelcontextprotocol/client", "@modelcontextprotocol/sdk", "@mastra/core", "@mastra/mcp", "genkit", "@genkit-ai/mcp", "@genkit-ai/compat-oai", "langchain", "@ax-llm/ax")
	for fw, pkg := range ownFolder {
		d := filepath.Join(dir, fw)
		if _, err := os.Stat(filepath.Join(d, "node_modules", pkg, "package.json")); err != nil {
			frameworksMissing(t, pkg, d)
		}
		agentScripts.Store(d, writeScript(t, d, "reach-agent", agentScript(t))) // beside node_modules, so that its imports resolve
	}
	return dir, node
}

// agentScripts holds, by folder, the copy of agent.mjs this test process
// wrote there (writeScript).
var agentScripts sync.Map

// writeScript writes src into folder dir (beside the node_modules its
// imports resolve from) under a name of this test's own (name-*.mjs),
// removed when the test ends, and returns its path. The folder is shared:
// every checkout whose tests run with the same REACH_FRAMEWORKS_CACHE
// writes its scripts there, and a script under a fixed name was replaced
// by another checkout's version while this one's tests ran it (an older
// agent.mjs named a request on KaibanJS's clients, and a run's tool calls
// were at the top of its request, under no model turn).
func writeScript(t *testing.T, dir, name string, src []byte) string {
	t.Helper()
	f, err := os.CreateTemp(dir, name+"-*.mjs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.Write(src); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// ownFolder are the frameworks installed in a folder of their own beside
// the others (scripts/frameworks-deps.sh), each by the package it needs:
// VoltAgent and BeeAI want the AI SDK 6, which the AI SDK's own 7
// conflicts with (BeeAI zod 3 too).
var ownFolder = map[string]string{"voltagent": "@voltagent/core", "inspector": "@modelcontextprotocol/inspector", "kaibanjs": "kaibanjs", "llamaindex": "@llamaindex/workflow",
	"beeai": "beeai-framework", "adk": "@google/adk", "strands": "@strands-agents/sdk"}

// shopUpstream is the MCP server the frameworks' tools come from.
type shopUpstream struct {
	mu       sync.Mutex
	calls    map[string]int // tool -> calls that reached it
	polls    map[string]int // job -> status polls
	refunds  int
	waiting  chan struct{} // a wait call began
	waitDone chan error    // a wait call ended: its context's error
}

func newShopUpstream(t *testing.T) (*shopUpstream, string) {
	t.Helper()
	return newShopUpstreamWith(t, false)
}

// newShopUpstreamWith is newShopUpstream with the help centre's search tool
// too (search): only the tests that use it offer it, since every tool the
// upstream lists is in each model call's prompt, and the token budgets of
// the others are sized on their prompts.
func newShopUpstreamWith(t *testing.T, search bool) (*shopUpstream, string) {
	t.Helper()
	u := &shopUpstream{calls: map[string]int{}, polls: map[string]int{}, waiting: make(chan struct{}, 4), waitDone: make(chan error, 4)}
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	read := &mcp.ToolAnnotations{ReadOnlyHint: true}
	yes := true
	count := func(tool string) {
		u.mu.Lock()
		u.calls[tool]++
		u.mu.Unlock()
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look q up in the knowledge base.", Annotations: read},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Q string `json:"q"`
		}) (*mcp.CallToolResult, any, error) {
			count("lookup")
			return shopText("found nothing new about " + in.Q), nil, nil
		})
	if search {
		mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "Search the help centre.", Annotations: read},
			func(_ context.Context, _ *mcp.CallToolRequest, in struct {
				Q string `json:"q"`
			}) (*mcp.CallToolResult, any, error) {
				count("search")
				return shopText(fmt.Sprintf("No results for %q.", in.Q)), nil, nil
			})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "job_status", Description: "The status of a job.", Annotations: read},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Job string `json:"job"`
		}) (*mcp.CallToolResult, any, error) {
			count("job_status")
			u.mu.Lock()
			u.polls[in.Job]++
			n := u.polls[in.Job]
			u.mu.Unlock()
			if n >= 5 {
				return shopText("job " + in.Job + ": done"), nil, nil
			}
			return shopText(fmt.Sprintf("job %s: running, %d%%", in.Job, 20*n)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list_page", Description: "One page of the order list.", Annotations: read},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Page int `json:"page"`
		}) (*mcp.CallToolResult, any, error) {
			count("list_page")
			return shopText(fmt.Sprintf("page %d: orders %d-%d", in.Page, 10*in.Page-9, 10*in.Page)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "Wait for the warehouse.", Annotations: read},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			Q string `json:"q"`
		}) (*mcp.CallToolResult, any, error) {
			count("wait")
			u.waiting <- struct{}{}
			select {
			case <-ctx.Done():
				u.waitDone <- ctx.Err()
				return nil, nil, ctx.Err()
			case <-time.After(30 * time.Second):
				u.waitDone <- nil
				return shopText("waited"), nil, nil
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "refund", Description: "Refund an order.", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Order string `json:"order"`
		}) (*mcp.CallToolResult, any, error) {
			count("refund")
			u.mu.Lock()
			u.refunds++
			u.mu.Unlock()
			return shopText("refunded order " + in.Order), nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{PropagateRequestCancellation: true}))
	t.Cleanup(srv.Close)
	return u, srv.URL
}

func shopText(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func (u *shopUpstream) called(tool string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[tool]
}

// shopModel is a scripted OpenAI-compatible model, of chat completions and
// of the Responses API (the default of OpenAI Agents and the AI SDK). The
// user's first message names the task; the model plays it turn by turn
// from the conversation, calling tools by the names the framework gave
// them, and reports usage (a quarter of the request's bytes as prompt, 40
// tokens of answer).
type shopModel struct {
	turns    atomic.Int64
	tokens   atomic.Int64
	refusals atomic.Int64 // turns whose last tool result was a budget's refusal
	raw      atomic.Value // string: the last tool message of chat completions, as sent
	streamed atomic.Int64 // Responses API answers streamed
	// gate orders the second turn of the "approveagain" and "stale"
	// tasks: that turn sends on held and answers only once hold is closed
	// (the approval decided, the other client's write made). Nil for other
	// tests; set while the model's server runs, hence atomic.
	gate atomic.Pointer[turnGate]
}

// turnGate is a shopModel's gate.
type turnGate struct{ held, hold chan struct{} }

// wait sends on the gate's held and waits for hold, if a gate is set.
func (m *shopModel) wait() {
	if g := m.gate.Load(); g != nil {
		g.held <- struct{}{}
		<-g.hold
	}
}

func (m *shopModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input json.RawMessage `json:"input"` // the Responses API's
		Tools []struct {
			Name     string `json:"name"` // the Responses API's
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	responses := r.URL.Path == "/v1/responses"
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	m.turns.Add(1)
	text := func(c json.RawMessage) string {
		var s string
		if json.Unmarshal(c, &s) == nil {
			return s
		}
		var parts []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(c, &parts)
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	task := ""
	var results []string // the tool messages' texts, in order
	for _, msg := range body.Messages {
		switch msg.Role {
		case "user":
			if task == "" {
				task = text(msg.Content)
			}
		case "tool":
			results = append(results, resultText(text(msg.Content)))
			m.raw.Store(text(msg.Content))
		}
	}
	// KaibanJS's agent calls no tools through the API: its system prompt
	// asks for JSON ({"action", "actionInput"} or {"finalAnswer"}), its
	// first user message wraps the task ("please complete the following
	// task: loop. Your expected output …"), and the tools' results come
	// back as user messages.
	react := len(body.Messages) > 0 && body.Messages[0].Role == "system" && strings.Contains(text(body.Messages[0].Content), `"finalAnswer"`)
	if react {
		task, results = "", nil
		for _, msg := range body.Messages {
			if msg.Role != "user" {
				continue
			}
			c := text(msg.Content)
			if task == "" {
				if _, rest, ok := strings.Cut(c, "following task: "); ok {
					task, _, _ = strings.Cut(rest, ".")
				}
				continue
			}
			if r, ok := strings.CutPrefix(c, "You got this result from the tool: "); ok {
				c = resultText(r)
			}
			results = append(results, c)
		}
	}
	task = strings.TrimPrefix(task, "Your task: ")                   // BeeAI's RequirementAgent wraps the prompt so
	task = strings.TrimSpace(strings.TrimPrefix(task, "Question: ")) // Ax writes its program's input field so, a line
	if responses {
		var items []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			Output  json.RawMessage `json:"output"`
		}
		if json.Unmarshal(body.Input, &items) != nil {
			var s string
			json.Unmarshal(body.Input, &s)
			task = s
		}
		for _, it := range items {
			switch {
			case it.Role == "user" && task == "":
				task = text(it.Content)
			case it.Type == "function_call_output":
				results = append(results, resultText(text(it.Output)))
			}
		}
		for i, t := range body.Tools {
			if t.Function.Name == "" {
				body.Tools[i].Function.Name = t.Name
			}
		}
	}
	hasTool := func(name string) bool {
		for _, t := range body.Tools {
			if t.Function.Name == name {
				return true
			}
		}
		return false
	}
	// A hand-off (OpenAI Agents' handoffs): the agent the manager's turn
	// handed the run to reads the whole conversation, the manager's task
	// and the hand-off's result among it, and has neither the manager's
	// tool nor its hand-off: it plays the task handed on, on the results
	// after the hand-off's.
	if sub, ok := strings.CutPrefix(task, "delegate "); ok && len(results) > 0 && !hasTool("researcher") && !hasTool(handoffTool) {
		task, results = sub, results[1:]
	}
	last := ""
	if len(results) > 0 {
		last = results[len(results)-1]
	}
	toolName := func(want string) string { // up__lookup through reach, lookup from the upstream itself
		if react { // the tools are in the system prompt, "name: description"
			if strings.Contains(text(body.Messages[0].Content), want+": ") {
				return want
			}
			return strings.TrimPrefix(want, "up__")
		}
		for _, t := range body.Tools {
			if link.NameMatches(t.Function.Name, want) || link.NameMatches(t.Function.Name, strings.TrimPrefix(want, "up__")) {
				return t.Function.Name
			}
		}
		return want
	}
	var call, callArgs, say string
	var more [][2]string // further tool calls of the same turn (name, arguments): parallel tool calls
	switch task {
	case "loop": // the same lookup, again and again, until reach refuses it
		if last != "" && !strings.HasPrefix(last, "found nothing new") {
			say = "I stop here: " + last
		} else {
			call, callArgs = "up__lookup", `{"q":"refund policy"}`
		}
	case "reword": // one question reworded, each search finding nothing, until reach refuses it
		switch {
		case last != "" && !strings.HasPrefix(last, "No results"):
			say = "I stop here: " + last
		case len(results) < len(rewordings):
			b, _ := json.Marshal(map[string]string{"q": rewordings[len(results)]})
			call, callArgs = "up__search", string(b)
		default:
			say = "gave up after " + strconv.Itoa(len(results)) + " searches"
		}
	case "ignore": // the same lookup whatever it is told: a model that ignores reach's refusals
		call, callArgs = "up__lookup", `{"q":"refund policy"}`
	case "legit": // poll a job until it is done, then read four pages
		switch {
		case last != "" && !strings.HasPrefix(last, "job ") && !strings.HasPrefix(last, "page "):
			say = "REFUSED: " + last
		case !slices.ContainsFunc(results, func(s string) bool { return strings.HasSuffix(s, ": done") }):
			call, callArgs = "up__job_status", `{"job":"j1"}`
		default:
			pages := 0
			for _, s := range results {
				if strings.HasPrefix(s, "page ") {
					pages++
				}
			}
			if pages < 4 {
				call, callArgs = "up__list_page", fmt.Sprintf(`{"page":%d}`, pages+1)
			} else {
				say = "all done"
			}
		}
	case "budget": // ever new lookups: only the budget ends it
		if strings.Contains(last, "tool-call budget") && strings.Contains(last, "answer with what you have") {
			m.refusals.Add(1)
		}
		call, callArgs = "up__lookup", fmt.Sprintf(`{"q":"topic %d"}`, len(results))
	case "cancel":
		if len(results) == 0 {
			call, callArgs = "up__wait", `{"q":"stock"}`
		} else {
			say = "went on after: " + last
		}
	case "approve":
		if len(results) == 0 {
			call, callArgs = "up__refund", `{"order":"1001"}`
		} else {
			say = "refund: " + last
		}
	case "approveagain": // a refund asked, pending approval: asked again once approved, and once more after it ran
		switch len(results) {
		case 0:
			call, callArgs = "up__refund", `{"order":"1001"}`
		case 1, 2:
			if len(results) == 1 {
				m.wait()
			}
			call, callArgs = "up__refund", `{"order":"1001"}`
		default:
			say = "refund: " + strings.Join(results, " | ")
		}
	case "trip": // a booking, then its payment, which fails: the booking is undone
		switch len(results) {
		case 0:
			call, callArgs = "up__book", `{"id":"7"}`
		case 1:
			call, callArgs = "up__charge", `{"id":"7"}`
		default:
			say = "trip: " + strings.Join(results, " | ")
		}
	case "stale": // an order read, its address set; read again and set again when told it changed
		switch {
		case len(results) == 0 || len(results) == 2 && strings.Contains(last, "Read it again"):
			call, callArgs = "up__get_order", `{"id":"7"}`
		case len(results) == 1 || len(results) == 3:
			if len(results) == 1 {
				m.wait()
			}
			call, callArgs = "up__set_address", `{"id":"7","address":"Elm St"}`
		default:
			say = "stale: " + strings.Join(results, " | ")
		}
	case "fanloop": // the same three lookups of one turn, again and again, until reach refuses one
		if refused := slices.IndexFunc(results, func(s string) bool { return !strings.HasPrefix(s, "found nothing new") }); refused >= 0 {
			say = "I stop here: " + results[refused]
		} else {
			call, callArgs = "up__lookup", `{"q":"topic 0"}`
			for i := 1; i < 3; i++ {
				more = append(more, [2]string{"up__lookup", fmt.Sprintf(`{"q":"topic %d"}`, i)})
			}
		}
	case "fan", "fanwait": // several calls in one turn, which the framework runs at once
		if len(results) == 0 {
			tool, arg := "up__lookup", "q"
			if task == "fanwait" {
				tool = "up__wait"
			}
			call, callArgs = tool, fmt.Sprintf(`{"%s":"topic 0"}`, arg)
			for i := 1; i < 3; i++ {
				more = append(more, [2]string{tool, fmt.Sprintf(`{"%s":"topic %d"}`, arg, i)})
			}
		} else {
			slices.Sort(results)
			say = "read: " + strings.Join(results, " | ")
		}
	default:
		var ok bool
		if call, callArgs, say, ok = guardTurn(task, results); ok {
			break
		}
		if call, callArgs, say, more, ok = fw34Turn(task, results); ok {
			break
		}
		if call, callArgs, say, ok = delegateTurn(task, results, hasTool(handoffTool)); !ok {
			say = fmt.Sprintf("unknown task %q", task)
		}
	}
	for i := range more {
		more[i][0] = toolName(more[i][0])
	}
	// A framework that ends its run through a tool of its own (BeeAI's
	// final_answer, which it makes the model call: tool_choice required)
	// gets the answer as that tool's call.
	if say != "" && slices.ContainsFunc(body.Tools, func(t struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}) bool {
		return t.Function.Name == "final_answer"
	}) {
		b, _ := json.Marshal(map[string]string{"response": say})
		call, callArgs, say = "final_answer", string(b), ""
	}
	if responses {
		m.respond(w, len(raw), toolName(call), callArgs, say, call != "", body.Stream, more...)
		return
	}
	if react {
		b, _ := json.Marshal(map[string]any{"finalAnswer": say, "isFinalAnswerReady": true})
		if call != "" {
			b, _ = json.Marshal(map[string]any{"thought": "I call a tool.", "action": toolName(call), "actionInput": json.RawMessage(callArgs)})
		}
		say, call = string(b), ""
	}
	var rid [6]byte
	rand.Read(rid[:])
	cid := "chatcmpl-" + hex.EncodeToString(rid[:]) // unique, as a model's: LangGraph merges messages of one id
	usage := map[string]any{"prompt_tokens": len(raw) / 4, "completion_tokens": 40, "total_tokens": len(raw)/4 + 40}
	m.tokens.Add(int64(len(raw)/4 + 40))
	msg := map[string]any{"role": "assistant", "content": say}
	finish := "stop"
	var tc map[string]any
	if call != "" {
		var id [6]byte
		rand.Read(id[:])
		tc = map[string]any{"id": "call_" + hex.EncodeToString(id[:]), "type": "function",
			"function": map[string]any{"name": toolName(call), "arguments": callArgs}}
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{tc}}
		finish = "tool_calls"
		for _, c := range more {
			rand.Read(id[:])
			msg["tool_calls"] = append(msg["tool_calls"].([]any), map[string]any{"id": "call_" + hex.EncodeToString(id[:]), "type": "function",
				"function": map[string]any{"name": c[0], "arguments": c[1]}})
		}
	}
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": cid, "object": "chat.completion", "created": time.Now().Unix(), "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": cid, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	if call != "" {
		for i, c := range msg["tool_calls"].([]any) {
			c.(map[string]any)["index"] = i
		}
		chunk(map[string]any{"role": "assistant", "tool_calls": msg["tool_calls"]}, nil)
	} else {
		chunk(map[string]any{"role": "assistant", "content": say}, nil)
	}
	chunk(map[string]any{}, finish)
	if body.StreamOptions.IncludeUsage {
		b, _ := json.Marshal(map[string]any{"id": cid, "object": "chat.completion.chunk", "model": "scripted", "choices": []any{}, "usage": usage})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// rewordings are the "reword" task's searches: one question (the refund
// policy) in other words each time, sharing a word, none with a number.
var rewordings = []string{"refund policy", "policy on refunds", "how do refunds work", "refund rules for orders",
	"when is a refund given", "refunds and returns policy", "refund conditions", "getting a refund"}

// respond writes a Responses API answer to a request of size bytes: a
// function call of name with args, or the text say; whole, or streamed as
// OpenAI's endpoint streams it (Strands' default; OpenAI Agents and the AI
// SDK do not stream by default): named events, the item added, its text or
// arguments as deltas and again whole in .done events, the item done, and
// the whole response with its usage in response.completed.
func (m *shopModel) respond(w http.ResponseWriter, size int, name, args, say string, call, stream bool, more ...[2]string) {
	id := func(prefix string) string {
		var b [6]byte
		rand.Read(b[:])
		return prefix + hex.EncodeToString(b[:])
	}
	m.tokens.Add(int64(size/4 + 40))
	out := map[string]any{"type": "message", "id": id("msg_"), "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": say, "annotations": []any{}}}}
	if call {
		out = map[string]any{"type": "function_call", "id": id("fc_"), "call_id": id("call_"), "name": name, "arguments": args, "status": "completed"}
	}
	output := []any{out}
	for _, c := range more {
		output = append(output, map[string]any{"type": "function_call", "id": id("fc_"), "call_id": id("call_"), "name": c[0], "arguments": c[1], "status": "completed"})
	}
	if stream && len(more) > 0 {
		panic("shopModel streams one tool call a turn")
	}
	resp := map[string]any{"id": id("resp_"), "object": "response", "created_at": time.Now().Unix(), "status": "completed",
		"model": "scripted", "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": size / 4, "output_tokens": 40, "total_tokens": size/4 + 40,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	m.streamed.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(fields)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	begun := maps.Clone(resp)
	begun["status"], begun["output"], begun["usage"] = "in_progress", []any{}, nil
	event("response.created", map[string]any{"response": begun})
	event("response.in_progress", map[string]any{"response": begun})
	added := maps.Clone(out)
	added["status"] = "in_progress"
	item := out["id"]
	if call {
		added["arguments"] = ""
		event("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		for _, d := range halves(args) { // in deltas, as a model writes them
			event("response.function_call_arguments.delta", map[string]any{"item_id": item, "output_index": 0, "delta": d})
		}
		event("response.function_call_arguments.done", map[string]any{"item_id": item, "output_index": 0, "arguments": args})
	} else {
		added["content"] = []any{}
		event("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		event("response.content_part.added", map[string]any{"item_id": item, "output_index": 0, "content_index": 0, "part": part})
		for _, d := range halves(say) {
			event("response.output_text.delta", map[string]any{"item_id": item, "output_index": 0, "content_index": 0, "delta": d, "logprobs": []any{}})
		}
		event("response.output_text.done", map[string]any{"item_id": item, "output_index": 0, "content_index": 0, "text": say, "logprobs": []any{}})
		done := maps.Clone(part)
		done["text"] = say
		event("response.content_part.done", map[string]any{"item_id": item, "output_index": 0, "content_index": 0, "part": done})
	}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": out})
	event("response.completed", map[string]any{"response": resp})
}

// halves cuts s in two at a rune's start.
func halves(s string) []string {
	half := len(s) / 2
	for half > 0 && !utf8.RuneStart(s[half]) {
		half--
	}
	return []string{s[:half], s[half:]}
}

// resultText is the text of a tool result as a framework passes it to the
// model: as is, as a JSON string (Genkit's), as MCP content items in JSON,
// whose texts it joins, or as Genkit's {"error": text} for a result with
// isError.
func resultText(s string) string {
	var str string
	if json.Unmarshal([]byte(s), &str) == nil {
		return str
	}
	var items []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal([]byte(s), &items) != nil {
		var one struct {
			Text    string `json:"text"`
			Error   string `json:"error"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal([]byte(s), &one) != nil {
			return s
		}
		items = append(one.Content, struct {
			Text string `json:"text"`
		}{one.Text + one.Error})
	}
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.Text)
	}
	return b.String()
}

// wire records what reaches the gateway: the status of each model call and
// the protocol version of each MCP tools/call.
type wire struct {
	mu        sync.Mutex
	chat      []int
	models    map[string]int // model calls by path
	protocols map[string]int
}

func (c *wire) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/responses":
			// The status is recorded as it is sent, before the client can
			// see it: a client told of a stop mid-stream may end its run
			// (and a test read statuses) before the handler returns.
			rec := &statusWriter{ResponseWriter: w, sent: func(status int) {
				c.mu.Lock()
				c.chat = append(c.chat, status)
				c.models[r.URL.Path]++
				c.mu.Unlock()
			}}
			h.ServeHTTP(rec, r)
			rec.send(http.StatusOK) // nothing written: an empty 200
			return
		case r.URL.Path == "/mcp" && r.Method == http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				v := r.Header.Get(mcpwire.HeaderProtocol)
				c.mu.Lock()
				c.protocols[v]++
				c.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (c *wire) statuses() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.chat)
}

// statusWriter tells sent the status of its response once, as its
// header goes out (WriteHeader, or the first Write or Flush, which send
// 200), before any of it reaches the client.
type statusWriter struct {
	http.ResponseWriter
	sent   func(status int)
	status int // sent, or 0
}

func (s *statusWriter) send(code int) {
	if s.status == 0 {
		s.status = code
		s.sent(code)
	}
}

func (s *statusWriter) WriteHeader(code int) { s.send(code); s.ResponseWriter.WriteHeader(code) }
func (s *statusWriter) Write(b []byte) (int, error) {
	s.send(http.StatusOK)
	return s.ResponseWriter.Write(b)
}
func (s *statusWriter) Flush() {
	s.send(http.StatusOK)
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// shop is one gateway in front of the shop upstream and the scripted model.
type shop struct {
	g        *Gateway
	url      string
	up       *shopUpstream
	upURL    string // the upstream itself
	model    *shopModel
	modelURL string // the model itself
	wire     *wire
}

func newShop(t *testing.T, extra string) *shop {
	t.Helper()
	return newShopBudgets(t, extra, "")
}

// newShopBudgets is newShop with more named budgets, each a line
// ("  name: {turns: 3}\n").
func newShopBudgets(t *testing.T, extra, budgets string) *shop {
	t.Helper()
	return newShopWith(t, extra, budgets, false)
}

// newSearchShop is newShop whose upstream offers the search tool too.
func newSearchShop(t *testing.T, extra string) *shop {
	t.Helper()
	return newShopWith(t, extra, "", true)
}

func newShopWith(t *testing.T, extra, budgets string, search bool) *shop {
	t.Helper()
	up, upURL := newShopUpstreamWith(t, search)
	s := shopAt(t, upURL, "budgets:\n  small: {tokens: 4000}\n"+budgets+approvalsWait(extra)+extra)
	s.up = up
	return s
}

// shopAt serves a gateway in front of the upstream at upURL (named up)
// and a scripted model (shopModel), with the configuration extra; its up
// is left nil, for the caller's upstream.
func shopAt(t *testing.T, upURL, extra string) *shop {
	t.Helper()
	m := &shopModel{}
	ms := httptest.NewServer(m)
	t.Cleanup(ms.Close)
	g, url, w := wiredGateway(t, fmt.Sprintf("upstreams:\n  - name: up\n    url: %s\nmodel: {base_url: '%s/v1', name: scripted}\n%s", upURL, ms.URL, extra))
	return &shop{g: g, url: url, upURL: upURL, model: m, modelURL: ms.URL, wire: w}
}

// wiredGateway serves the gateway the configuration yaml makes behind a
// wire that counts what it is sent, and returns the gateway, its URL and
// the wire.
func wiredGateway(t *testing.T, yaml string) (*Gateway, string, *wire) {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	w := &wire{protocols: map[string]int{}, models: map[string]int{}}
	srv := httptest.NewServer(w.wrap(g.Handler()))
	t.Cleanup(srv.Close)
	return g, srv.URL, w
}

// approvalsWait is the shop's approvals setting, unless extra has its own.
func approvalsWait(extra string) string {
	if strings.Contains(extra, "approvals:") {
		return ""
	}
	return "approvals: {wait: 30s}\n"
}

// agentRun is what agent.mjs reported.
type agentRun struct {
	OK     bool   `json:"ok"`
	Text   string `json:"text"`
	Error  string `json:"error"`
	Status *int   `json:"status"`
	Agent  string `json:"agent"` // the agent that ended the run, where the script names it
	took   time.Duration
}

// runAgent runs agent.mjs with framework fw on task, pointed at mcpURL and
// modelURL, and returns its report.
func runAgent(t *testing.T, dir, node, fw, mcpClient, modelAPI, mcpURL, modelURL, task string, headers map[string]string) agentRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	h, _ := json.Marshal(headers)
	folder := dir
	if _, ok := ownFolder[fw]; ok {
		folder = filepath.Join(dir, fw)
	}
	v, ok := agentScripts.Load(folder)
	if !ok {
		t.Fatalf("no agent script in %s: frameworksCache writes it", folder)
	}
	script := v.(string)
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "FRAMEWORK="+fw, "MCP_URL="+mcpURL, "MODEL_URL="+modelURL, "TASK="+task, "HEADERS="+string(h),
		"MCP_CLIENT="+mcpClient, "MODEL_API="+modelAPI, "MAX_STEPS=50",
		"OPENAI_AGENTS_DISABLE_TRACING=1", // no network here: the traces would go to OpenAI's servers
	)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", fw, task, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r agentRun
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("%s %s printed:\n%s", fw, task, out)
	}
	r.took = took
	// The run's wall time beside node's CPU time: how much of the test's
	// time is node working (a figure for its running time, not a check).
	t.Logf("%s %s: %v wall, %v CPU in node", fw, task, took.Round(time.Millisecond),
		(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Round(time.Millisecond))
	if len(lines) > 1 {
		t.Logf("%s %s also printed:\n%s", fw, task, clip(strings.Join(lines[:len(lines)-1], "\n"), 3000))
	}
	return r
}

// frameworkCases are the frameworks, each on the protocol versions it speaks:
// the reach configuration that offers them, the MCP client it uses, and the
// model API it calls (its default, or "chat": its opt-out of the Responses
// API, which OpenAI Agents and the AI SDK call by default).
var frameworkCases = []struct {
	fw, protocol, config, mcpClient, modelAPI string
	noBaseline                                bool // no run without reach (another case of the framework has one)
}{
	// OpenAI Agents and the AI SDK try the sessionless protocol first; a
	// reach that does not offer it gets them on 2025-11-25.
	{"openai-agents", "2026-07-28", "", "", "", false},
	{"openai-agents", "2025-11-25", "mcp_protocols: [2025-11-25, 2025-06-18, 2025-03-26]\n", "", "", true},
	{"openai-agents", "2026-07-28", "", "", "chat", true},
	{"ai-sdk", "2026-07-28", "", "", "", false},
	{"ai-sdk", "2025-11-25", "mcp_protocols: [2025-11-25, 2025-06-18, 2025-03-26]\n", "", "", true},
	{"ai-sdk", "2026-07-28", "", "", "chat", true},
	// LangGraph's MultiServerMCPClient speaks 2025-11-25 only; on
	// 2026-07-28 it loads the tools through the TypeScript client of that
	// protocol. Its ChatOpenAI calls chat completions by default.
	{"langgraph", "2025-11-25", "", "", "", false},
	{"langgraph", "2026-07-28", "", "v2", "", true},
	{"mastra", "2026-07-28", "", "", "", false},
	{"genkit", "2025-11-25", "", "", "", false},
	{"voltagent", "2025-11-25", "", "", "", false},
	// KaibanJS documents LangChain's MCP adapters for its tools; the last
	// for its LangChain (0.3) on the SDK 1.22 speaks 2025-06-18.
	{"kaibanjs", "2025-06-18", "", "", "", false},
	// LlamaIndex's agent has no step limit: without reach, the loop's
	// baseline would never end.
	{"llamaindex", "2025-11-25", "", "", "", true},
	// BeeAI's MCPTool takes the tools from the MCP TypeScript SDK's Client.
	{"beeai", "2025-11-25", "", "", "", false},
	// Google's ADK: its MCPToolset (the TypeScript SDK's client), its model
	// through docs/frameworks/adk.md's class of chat completions.
	{"adk", "2025-11-25", "", "", "", false},
	// LangChain's agent (createAgent of langchain 1.x) with its MCP client
	// (MultiServerMCPClient, 2025-11-25 only) and ChatOpenAI, which calls
	// chat completions by default.
	{"langchain", "2025-11-25", "", "", "", false},
	// Ax (@ax-llm/ax): its AxGen program with its own MCP client, which
	// speaks the sessionless protocol first, and its OpenAI profile. No
	// baseline: the shop's go-sdk server speaks no 2026-07-28, and Ax's
	// fallback to 2025-11-25 is refused by it.
	{"ax", "2026-07-28", "", "", "", true},
	// Strands Agents (TypeScript) on its default, the Responses API
	// streamed. Its agent has no step limit: without reach, the loop's
	// baseline would never end.
	{"strands", "2025-11-25", "", "", "", true},
}

// streamsResponses are the frameworks that stream their Responses API
// calls by default (OpenAI Agents and the AI SDK do not).
var streamsResponses = map[string]bool{"strands": true}

// modelPath is the model API a case's framework calls.
func modelPath(fw, modelAPI string) string {
	if fw == "langgraph" || fw == "langchain" || fw == "ax" || fw == "kaibanjs" || fw == "llamaindex" || fw == "mastra" || fw == "genkit" || fw == "beeai" || fw == "adk" || modelAPI == "chat" { // Mastra and Genkit call chat completions on an OpenAI-compatible base URL
		return "/v1/chat/completions"
	}
	return "/v1/responses"
}

// TestFrameworks runs each framework on its defaults through reach, on
// both protocol versions: a tool loop is stopped; polling and pagination
// run without a false refusal, in one request whose graph nests each tool
// call under the model turn that chose it; a spent budget ends the run
// with one refused model call (no retries) telling the model to finish; a
// cancel stops the tool call in flight and the run; an approval holds a
// refund until it is approved, which then runs once.
func TestFrameworks(t *testing.T) {
	dir, node := frameworksCache(t)
	for _, fc := range frameworkCases {
		name := fc.fw + "/" + fc.protocol
		if fc.modelAPI != "" {
			name += "/" + fc.modelAPI
		}
		t.Run(name, func(t *testing.T) {
			run := func(s *shop, task string, headers map[string]string) agentRun {
				return runAgent(t, dir, node, fc.fw, fc.mcpClient, fc.modelAPI, s.url+"/mcp", s.url+"/v1", task, headers)
			}
			checkProtocol := func(s *shop) {
				s.wire.mu.Lock()
				defer s.wire.mu.Unlock()
				for v, n := range s.wire.protocols {
					if v != fc.protocol {
						t.Errorf("%d tools/call on protocol %q, want %s", n, v, fc.protocol)
					}
				}
				for p, n := range s.wire.models {
					if p != modelPath(fc.fw, fc.modelAPI) {
						t.Errorf("%d model calls to %s, want %s", n, p, modelPath(fc.fw, fc.modelAPI))
					}
				}
			}

			t.Run("loop", func(t *testing.T) {
				s := newShop(t, fc.config)
				r := run(s, "loop", nil)
				if !r.OK || !strings.Contains(r.Text, "I stop here") {
					for _, q := range s.g.rt.Requests() {
						for _, f := range q.Frames() {
							t.Logf("%s %s %s %v parent=%v %s", q.ID(), f.Kind, f.Name, f.State(), f.Parent != nil, clip(string(f.Args), 80))
						}
					}
					t.Fatalf("the run: %+v (lookups %d)", r, s.up.called("lookup"))
				}
				if n := s.up.called("lookup"); n > 3 {
					t.Errorf("the loop ran %d calls upstream, want it stopped by the third", n)
				}
				t.Logf("loop through reach: %d lookups ran, %d model turns, %d tokens; the model read: %s",
					s.up.called("lookup"), s.model.turns.Load(), s.model.tokens.Load(), clip(r.Text, 300))
				checkProtocol(s)
				if fc.noBaseline {
					return
				}
				// The same run without reach, for comparison (once per
				// framework): the framework's step limit (50) is all that
				// ends it.
				direct := newShop(t, fc.config)
				d := runAgent(t, dir, node, fc.fw, fc.mcpClient, fc.modelAPI, direct.upURL, direct.modelURL+"/v1", "loop", nil)
				t.Logf("loop without reach: %d lookups ran, %d model turns, %d tokens (%s)", direct.up.called("lookup"),
					direct.model.turns.Load(), direct.model.tokens.Load(), clip(d.Error+d.Text, 120))
				if direct.up.called("lookup") <= 3*s.up.called("lookup") {
					t.Errorf("without reach the loop ran %d calls, with reach %d: want it far longer without", direct.up.called("lookup"), s.up.called("lookup"))
				}
			})

			t.Run("legit", func(t *testing.T) {
				s := newShop(t, fc.config)
				r := run(s, "legit", nil)
				if !r.OK || r.Text != "all done" {
					t.Fatalf("the run: %+v", r)
				}
				if s.up.called("job_status") != 5 || s.up.called("list_page") != 4 {
					t.Errorf("upstream calls: %d polls, %d pages; want 5 and 4", s.up.called("job_status"), s.up.called("list_page"))
				}
				checkOneGraph(t, s.g, 10, 9)
				checkProtocol(s)
				if want, n := streamsResponses[fc.fw] && modelPath(fc.fw, fc.modelAPI) == "/v1/responses", s.model.streamed.Load(); want != (n == 10) || (!want && n != 0) {
					t.Errorf("%d of 10 Responses API answers streamed; want all streamed: %v", n, want)
				}
			})

			t.Run("budget", func(t *testing.T) {
				s := newShop(t, fc.config)
				r := run(s, "budget", map[string]string{link.HeaderBudget: "small"})
				if r.OK || !strings.Contains(r.Error, "finish with what you have") {
					t.Fatalf("the run: %+v, want it ended by the budget with the message to finish", r)
				}
				st := s.wire.statuses()
				refused := 0
				for _, c := range st {
					if c != http.StatusOK {
						refused++
					}
				}
				if refused != 1 || st[len(st)-1] != http.StatusPaymentRequired {
					t.Errorf("model calls answered %v, want one 402 at the end (no retry)", st)
				}
				t.Logf("budget: %d model calls (%v), %d tokens, ended in %v: %s", len(st), st, s.model.tokens.Load(), r.took.Round(time.Millisecond), clip(r.Error, 200))
				checkProtocol(s)
			})

			t.Run("cancel", func(t *testing.T) {
				s := newShop(t, fc.config)
				done := make(chan agentRun, 1)
				go func() { done <- run(s, "cancel", nil) }()
				select {
				case <-s.up.waiting:
				case r := <-done:
					t.Fatalf("the run ended before its tool call began: %+v", r)
				case <-time.After(60 * time.Second):
					t.Fatal("the tool call never began")
				}
				req := requestRunning(t, s.g, "up__wait")
				start := time.Now()
				if code, b := do(t, "POST", s.url+"/v1/requests/"+req.ID()+"/cancel", `{"mode":"cancel","reason":"the user pressed stop"}`, nil); code != 200 {
					t.Fatalf("cancel: %d %v", code, b)
				}
				select {
				case err := <-s.up.waitDone:
					if err == nil {
						t.Errorf("the upstream's call was not cancelled")
					}
					t.Logf("cancel: the upstream's call ended %v after the cancel", time.Since(start).Round(time.Millisecond))
				case <-time.After(20 * time.Second):
					t.Fatal("the upstream's call was not cancelled")
				}
				r := <-done
				if r.OK && !strings.Contains(r.Text, "cancel") {
					t.Errorf("the run after the cancel: %+v", r)
				}
				for _, c := range s.wire.statuses()[1:] {
					if c == http.StatusOK {
						t.Errorf("a model turn after the cancel was answered: %v", s.wire.statuses())
					}
				}
				checkProtocol(s)
			})

			t.Run("approve", func(t *testing.T) {
				s := newShop(t, fc.config)
				done := make(chan agentRun, 1)
				go func() { done <- run(s, "approve", nil) }()
				id := pendingApproval(t, s.url, done)
				if code, b := do(t, "POST", s.url+"/v1/approvals/"+id+"/approve", `{"reason":"ok"}`, nil); code != 200 {
					t.Fatalf("approve: %d %v", code, b)
				}
				r := <-done
				if !r.OK || !strings.Contains(r.Text, "refunded order 1001") {
					t.Fatalf("the run: %+v", r)
				}
				if s.up.refunds != 1 {
					t.Errorf("%d refunds ran, want 1", s.up.refunds)
				}
				checkProtocol(s)
			})
		})
	}
}

// TestFrameworksScriptsOwn: a test runs the agent script it wrote, not
// one another checkout's tests wrote into the shared frameworks folder
// meanwhile. The script was "reach-agent.mjs" in the shared folder,
// rewritten by every checkout's tests: a run of an older agent.mjs, which
// named a request on KaibanJS's clients (Reach-Request), has its MCP calls
// in the request they name, not linked by the text their model wrote —
// its nine tool calls at the top of its request, under no model turn, as
// TestFrameworks/kaibanjs/legit failed once in CI under load. Here such an
// agent is where that name was, and the run is still one request with
// each tool call under its turn.
func TestFrameworksScriptsOwn(t *testing.T) {
	dir, node := frameworksCache(t)
	src, err := os.ReadFile("testdata/frameworks/agent.mjs")
	if err != nil {
		t.Fatal(err)
	}
	older := bytes.Replace(src, []byte("process.env.KAIBAN_REQUEST === '1'"), []byte("true"), 1)
	if bytes.Equal(older, src) {
		t.Fatal("agent.mjs no longer reads KAIBAN_REQUEST: make the older agent another way")
	}
	for _, d := range []string{dir, filepath.Join(dir, "kaibanjs")} {
		shared := filepath.Join(d, "reach-agent.mjs")
		if err := os.WriteFile(shared, older, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(shared) })
	}
	s := newShop(t, "")
	r := runAgent(t, dir, node, "kaibanjs", "", "", s.url+"/mcp", s.url+"/v1", "legit", nil)
	if !r.OK || r.Text != "all done" {
		t.Fatalf("the run: %+v", r)
	}
	checkOneGraph(t, s.g, 10, 9)
}

// checkOneGraph checks that the gateway holds one request with the run's
// model turns and tool calls, each tool call under a model turn (KaibanJS's
// too, which its agent writes into the model's text: reach reads it there).
func checkOneGraph(t *testing.T, g *Gateway, turns, calls int) {
	t.Helper()
	var roots []*reach.Request
	for _, r := range g.rt.Requests() {
		if r.Root() == r && len(r.Frames()) > 0 {
			roots = append(roots, r)
		}
	}
	if len(roots) != 1 {
		ids := []string{}
		for _, r := range roots {
			ids = append(ids, fmt.Sprintf("%s (%d frames)", r.ID(), len(r.Frames())))
		}
		logFrames(t, g)
		t.Fatalf("the run is in %d requests, want 1: %v", len(roots), ids)
	}
	nm, nt, unlinked := 0, 0, 0
	for _, f := range roots[0].Frames() {
		switch f.Kind {
		case reach.ModelFrame:
			nm++
		case reach.ToolFrame:
			nt++
			if f.Parent == nil || f.Parent.Kind != reach.ModelFrame {
				t.Errorf("tool call %s %s is not under a model turn", f.Name, f.Args)
				unlinked++
			}
		}
	}
	if nm != turns || nt != calls {
		t.Errorf("request %s has %d model turns and %d tool calls, want %d and %d", roots[0].ID(), nm, nt, turns, calls)
	}
	if unlinked > 0 || nm != turns || nt != calls {
		logFrames(t, g)
	}
}

// logFrames logs what a failure under load left, in the order the frames
// began: each frame's request, kind, id, state and parent, and whether the
// request still keeps it in memory or read it back from the audit log (a
// request keeps only its newest ended tool calls: reach.Options.StoredFrames),
// with the audit log's dropped and failed events, which a frame read back
// would miss.
func logFrames(t *testing.T, g *Gateway) {
	t.Helper()
	if g.audit != nil {
		st := g.audit.Stats()
		t.Logf("audit log: %d events appended, %d dropped, %d failed, %d queued", st.Appended, st.Dropped, st.Failed, st.Queued)
	}
	for _, r := range g.rt.Requests() {
		kept, gone := r.KeptFrames()
		inMemory := map[reach.FrameID]bool{}
		for _, f := range kept {
			inMemory[f.ID] = true
		}
		if gone.Frames > 0 {
			t.Logf("%s let %d ended tool calls go from memory (read back from the audit log)", r.ID(), gone.Frames)
		}
		for _, f := range r.Frames() {
			parent := "-"
			if f.Parent != nil {
				parent = fmt.Sprintf("%s %s", f.Parent.Kind, f.Parent.ID)
			}
			where := "kept"
			if !inMemory[f.ID] {
				where = "read back"
			}
			t.Logf("%s %s %s %s %v parent=%s (%s) %s", r.ID(), f.Kind, f.ID, f.Name, f.State(), parent, where, clip(string(f.Args), 60))
		}
	}
}

// requestRunning finds the request in which a call of tool is executing.
func requestRunning(t *testing.T, g *Gateway, tool string) *reach.Request {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, r := range g.rt.Requests() {
			for _, f := range r.Frames() {
				if f.Name == tool && f.State() == reach.Executing {
					return r.Root()
				}
			}
		}
	}
	t.Fatalf("no request runs %s", tool)
	return nil
}

// pendingApproval waits for a pending approval and returns its id.
func pendingApproval(t *testing.T, url string, done chan agentRun) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case r := <-done:
			t.Fatalf("the run ended before an approval was asked: %+v", r)
		default:
		}
		_, b := do(t, "GET", url+"/v1/approvals?status=pending", "", nil)
		if id, ok := path(b, "approvals", 0, "id").(string); ok {
			return id
		}
	}
	t.Fatal("no approval was asked for")
	return ""
}

// TestTypeScriptClientSessionless: the MCP TypeScript client of the
// sessionless protocol (@modelcontextprotocol/client), on its default
// negotiation, speaks 2026-07-28 to reach and accepts every answer — it
// checks them against the protocol's schema — a success, structured
// content, a tool's error and reach's refusals alike.
func TestTypeScriptClientSessionless(t *testing.T) {
	dir, node := frameworksCache(t)
	src, err := os.ReadFile("testdata/frameworks/ts-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-ts-client", src)
	g, _, srv := upstreamGateway(t, probeConfig+"tools:\n  up__slow: {access: forbidden}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, script, srv.URL+"/mcp").CombinedOutput()
	if err != nil {
		t.Fatalf("ts-client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("ts-client printed %s", out)
	}
	if got["error"] != nil || got["protocol"] != mcpwire.StatelessProtocol {
		t.Fatalf("ts-client: protocol %v, error %v", got["protocol"], got["error"])
	}
	if !slices.Contains(toStrings(got["tools"]), "up__echo") || slices.Contains(toStrings(got["tools"]), "up__slow") {
		t.Errorf("tools = %v", got["tools"])
	}
	for key, isError := range map[string]bool{"echo": false, "add": false, "fail": true, "forbidden": true, "badArgs": true} {
		r, _ := got[key].(map[string]any)
		if r == nil || r["thrown"] != nil || (r["isError"] == true) != isError || path(r, "content", 0, "text") == nil {
			t.Errorf("%s = %v, want a result with isError %v", key, got[key], isError)
		}
	}
	if path(got, "add", "structuredContent", "sum") != float64(5) {
		t.Errorf("add = %v, want structured content {sum: 5}", got["add"])
	}
	// All of it on fasthttp: its five calls on the fast lane, its
	// discovery and list inline.
	if fast, _, handed := g.Served(); fast != 5 || handed != 0 {
		t.Errorf("%d calls on the fast lane (want 5), %d hand-overs to net/http (want 0)", fast, handed)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// Clients of the HTTP+SSE transport, pinned to it: OpenAI Agents'
// MCPServerSSE and the TypeScript SDK 1.x's SSEClientTransport connect to
// /sse, list the tools, and get reach's refusals — a repeat, a forbidden
// tool — as results with isError, their text saying what to do.
func TestFrameworksLegacySSE(t *testing.T) {
	dir, node := frameworksCache(t)
	src, err := os.ReadFile("testdata/frameworks/sse-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-sse-client", src)
	_, _, srv := upstreamGateway(t, probeConfig+"tools:\n  up__slow: {access: forbidden}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, script, srv.URL+"/sse").CombinedOutput()
	if err != nil {
		t.Fatalf("sse-client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("sse-client printed %s", out)
	}
	if got["error"] != nil {
		t.Fatalf("sse-client: %v", got["error"])
	}
	for _, key := range []string{"agentsTools", "tools"} {
		if tools := toStrings(got[key]); !slices.Contains(tools, "up__echo") || slices.Contains(tools, "up__slow") {
			t.Errorf("%s = %v, want up__echo and not the forbidden up__slow", key, tools)
		}
	}
	if s, _ := path(got, "agentsEcho", 0, "text").(string); s != "echo: hi" {
		t.Errorf("OpenAI Agents' call = %v", got["agentsEcho"])
	}
	if s, _ := path(got, "agentsForbidden", 0, "text").(string); !strings.Contains(s, "may not call up__slow") {
		t.Errorf("OpenAI Agents' call of a forbidden tool = %v, want reach's refusal as its text", got["agentsForbidden"])
	}
	loop, _ := got["loop"].([]any)
	for i, want := range []bool{false, false, true} {
		if i >= len(loop) {
			t.Fatalf("loop = %v", got["loop"])
		}
		r, _ := loop[i].(map[string]any)
		if r == nil || r["thrown"] != nil || (r["isError"] == true) != want {
			t.Errorf("identical call %d = %v, want isError %v", i+1, loop[i], want)
		}
	}
	if s, _ := path(got, "loop", 2, "content", 0, "text").(string); !strings.Contains(s, "already ran 2 times") {
		t.Errorf("the third identical call = %v, want the loop's refusal", path(got, "loop", 2))
	}
	if r, _ := got["forbidden"].(map[string]any); r == nil || r["isError"] != true {
		t.Errorf("forbidden = %v, want a result with isError", got["forbidden"])
	}
}
