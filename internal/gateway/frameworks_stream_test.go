package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/redact"
)

// Real SDKs' stream parsers over what reach re-emits of a streamed answer
// (testdata/frameworks/stream.mjs): the openai SDK's chat completions and
// Responses streams, OpenAI Agents' streamed run and the AI SDK's
// streamText, each reading a scripted model (streamModel) that spells the
// model's key across its deltas, which reach masks, holding back the end of
// a delta that may begin it.

// streamSecret is the model's key: the secret the model spells.
const streamSecret = "sk-live-Zq7Xw2Pm9Rt4"

// masked is s as reach lets it out: the secret masked.
func masked(s string) string { return strings.ReplaceAll(s, streamSecret, redact.Mask) }

// streamScript is what streamModel streams for the turn of a user's
// message: a text and function calls, each split into deltas, with a cut
// at byte k of the secret wherever it is spelled (k = 0: a delta a byte).
type streamScript struct {
	summary    string // a reasoning summary, in the Responses API only
	text       string
	calls      [][2]string // name, arguments
	k          int
	incomplete bool // out of tokens: finish_reason length, response.incomplete
	bare       bool // no text's .done event, as some servers of the Responses API send
}

// pieces splits s into deltas of 7 bytes and one cut at byte k of each
// secret it spells (every byte when k is 0).
func (sc streamScript) pieces(s string) []string {
	cuts := map[int]bool{}
	for i := 7; i < len(s); i += 7 {
		cuts[i] = true
	}
	for i := 0; ; {
		j := strings.Index(s[i:], streamSecret)
		if j < 0 {
			break
		}
		cuts[i+j+sc.k] = true
		i += j + len(streamSecret)
	}
	var out []string
	last := 0
	for i := 1; i < len(s); i++ {
		if sc.k == 0 || cuts[i] {
			out = append(out, s[last:i])
			last = i
		}
	}
	return append(out, s[last:])
}

// streamModel is a scripted OpenAI-compatible model that streams: the
// user's first message "sdk:<k>" gets a text and two function calls (one
// spelling the secret), split at byte k of it; "cut:<k>" a text cut short
// k bytes into the secret, out of tokens; "tool" gets a call of the
// lookup tool with the secret in its arguments, and, once its result is
// in the conversation, a text that spells the secret.
//
// "hang" gets the start of an answer (a text's first delta), and then
// nothing until the request is stopped: hung is told as it waits.
type streamModel struct {
	turns atomic.Int64
	hung  chan struct{}
}

func (m *streamModel) script(task string, answered bool) streamScript {
	if kind, k, ok := strings.Cut(task, ":"); ok && (kind == "sdk" || kind == "bare") {
		// The text ends in an s, as the secret begins: reach holds it
		// back to the end and puts a delta of its own before the .done.
		n, _ := strconv.Atoi(k)
		return streamScript{summary: "The user wants " + streamSecret + " rotated; look up its keys", text: "Your key is " + streamSecret + ", keep it safe; the old one was " + streamSecret + ": rotate both keys",
			calls: [][2]string{{"up__lookup", `{"q":"rotate ` + streamSecret + ` now"}`}, {"up__list_page", `{"page":2}`}}, k: n, bare: kind == "bare"}
	}
	if k, ok := strings.CutPrefix(task, "cut:"); ok { // out of tokens k bytes into the secret
		n, _ := strconv.Atoi(k)
		return streamScript{text: "Out of tokens at the new key: " + streamSecret[:n], k: n, incomplete: true}
	}
	if answered {
		return streamScript{text: "Done: the lookup found nothing about " + streamSecret + ", so keep it.", k: 5}
	}
	return streamScript{text: "Let me look " + streamSecret + " up.", calls: [][2]string{{"up__lookup", `{"q":"` + streamSecret + `"}`}}, k: 3}
}

func (m *streamModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.turns.Add(1)
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input json.RawMessage `json:"input"`
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	task, answered := "", false
	for _, msg := range body.Messages {
		if msg.Role == "user" && task == "" && json.Unmarshal(msg.Content, &task) != nil {
			task = resultText(string(msg.Content)) // content parts
		}
		answered = answered || msg.Role == "tool"
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(body.Input, &items) != nil {
		json.Unmarshal(body.Input, &task)
	}
	for _, it := range items {
		if it.Role == "user" && task == "" && json.Unmarshal(it.Content, &task) != nil {
			task = resultText(string(it.Content))
		}
		answered = answered || it.Type == "function_call_output"
	}
	if task == "hang" {
		m.hang(w, r)
		return
	}
	sc := m.script(task, answered)
	for i, c := range sc.calls { // the tool's name as the framework gave it
		for _, t := range body.Tools {
			if n := t.Name + t.Function.Name; n != "" && (n == c[0] || strings.HasSuffix(n, strings.TrimPrefix(c[0], "up__"))) {
				sc.calls[i][0] = n
			}
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "%sdata: %s\n\n", event, b)
		w.(http.Flusher).Flush()
	}
	if r.URL.Path == "/v1/responses" {
		m.respond(send, sc, len(raw))
		return
	}
	id := fmt.Sprintf("chatcmpl-%d", m.turns.Load())
	chunk := func(delta map[string]any, finish any) {
		send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, p := range sc.pieces(sc.text) {
		chunk(map[string]any{"content": p}, nil)
	}
	for i, c := range sc.calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", m.turns.Load(), i), "type": "function",
			"function": map[string]any{"name": c[0], "arguments": ""}}}}, nil)
		for _, p := range sc.pieces(c[1]) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil)
		}
	}
	finish := "stop"
	if len(sc.calls) > 0 {
		finish = "tool_calls"
	}
	if sc.incomplete {
		finish = "length"
	}
	chunk(map[string]any{}, finish)
	if body.StreamOptions.IncludeUsage {
		send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": "scripted", "choices": []any{},
			"usage": map[string]any{"prompt_tokens": len(raw) / 4, "completion_tokens": 40, "total_tokens": len(raw)/4 + 40}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// hang streams the start of an answer, of chat completions or of the
// Responses API as r asks, tells m.hung, and waits for r to end: a model
// still answering when the request is stopped.
func (m *streamModel) hang(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	if r.URL.Path == "/v1/responses" {
		resp := map[string]any{"id": "resp_hang", "object": "response", "created_at": 1, "status": "in_progress", "model": "scripted",
			"output": []any{}, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}}
		item := map[string]any{"type": "message", "id": "msg_hang", "status": "in_progress", "role": "assistant", "content": []any{}}
		part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		for i, ev := range []map[string]any{
			{"type": "response.created", "response": resp},
			{"type": "response.in_progress", "response": resp},
			{"type": "response.output_item.added", "output_index": 0, "item": item},
			{"type": "response.content_part.added", "item_id": "msg_hang", "output_index": 0, "content_index": 0, "part": part},
			{"type": "response.output_text.delta", "item_id": "msg_hang", "output_index": 0, "content_index": 0, "delta": "Let me think", "logprobs": []any{}},
		} {
			ev["sequence_number"] = i
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
		}
	} else {
		for _, delta := range []map[string]any{{"role": "assistant", "content": ""}, {"content": "Let me think"}} {
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-hang", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
	}
	w.(http.Flusher).Flush()
	m.hung <- struct{}{}
	<-r.Context().Done()
}

// respond streams sc as the Responses API does: named events, numbered,
// each text as .delta events and whole in .done ones, a message item and
// a function call item for each call, and the usage in response.completed.
func (m *streamModel) respond(send func(string, any), sc streamScript, size int) {
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		send("event: "+typ+"\n", fields) // named, as OpenAI's are
	}
	turn := m.turns.Load()
	resp := map[string]any{"id": fmt.Sprintf("resp_%d", turn), "object": "response", "created_at": 1, "status": "in_progress", "model": "scripted",
		"output": []any{}, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}}
	ev("response.created", map[string]any{"response": resp})
	ev("response.in_progress", map[string]any{"response": resp})
	var output []any
	at := 0 // the next item's output_index
	if sc.summary != "" {
		rsID := fmt.Sprintf("rs_%d", turn)
		summary := func(text string) map[string]any { return map[string]any{"type": "summary_text", "text": text} }
		rs := func(parts ...any) map[string]any {
			return map[string]any{"id": rsID, "type": "reasoning", "summary": append([]any{}, parts...)}
		}
		place := func(fields map[string]any) map[string]any {
			fields["item_id"], fields["output_index"], fields["summary_index"] = rsID, at, 0
			return fields
		}
		ev("response.output_item.added", map[string]any{"output_index": at, "item": rs()})
		ev("response.reasoning_summary_part.added", place(map[string]any{"part": summary("")}))
		for _, p := range sc.pieces(sc.summary) {
			ev("response.reasoning_summary_text.delta", place(map[string]any{"delta": p}))
		}
		if !sc.bare {
			ev("response.reasoning_summary_text.done", place(map[string]any{"text": sc.summary}))
		}
		ev("response.reasoning_summary_part.done", place(map[string]any{"part": summary(sc.summary)}))
		ev("response.output_item.done", map[string]any{"output_index": at, "item": rs(summary(sc.summary))})
		output = append(output, rs(summary(sc.summary)))
		at++
	}
	msgID := fmt.Sprintf("msg_%d", turn)
	part := func(text string) map[string]any {
		return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
	}
	msg := func(status string, content ...any) map[string]any {
		return map[string]any{"id": msgID, "type": "message", "status": status, "role": "assistant", "content": append([]any{}, content...)}
	}
	ev("response.output_item.added", map[string]any{"output_index": at, "item": msg("in_progress")})
	ev("response.content_part.added", map[string]any{"item_id": msgID, "output_index": at, "content_index": 0, "part": part("")})
	for _, p := range sc.pieces(sc.text) {
		ev("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": at, "content_index": 0, "delta": p, "logprobs": []any{}})
	}
	if !sc.bare {
		ev("response.output_text.done", map[string]any{"item_id": msgID, "output_index": at, "content_index": 0, "text": sc.text, "logprobs": []any{}})
	}
	ev("response.content_part.done", map[string]any{"item_id": msgID, "output_index": at, "content_index": 0, "part": part(sc.text)})
	status := "completed"
	if sc.incomplete {
		status = "incomplete"
	}
	ev("response.output_item.done", map[string]any{"output_index": at, "item": msg(status, part(sc.text))})
	output = append(output, msg(status, part(sc.text)))
	at++
	for i, c := range sc.calls {
		fc := func(status, args string) map[string]any {
			return map[string]any{"id": fmt.Sprintf("fc_%d_%d", turn, i), "type": "function_call", "status": status,
				"call_id": fmt.Sprintf("call_%d_%d", turn, i), "name": c[0], "arguments": args}
		}
		ev("response.output_item.added", map[string]any{"output_index": at, "item": fc("in_progress", "")})
		for _, p := range sc.pieces(c[1]) {
			ev("response.function_call_arguments.delta", map[string]any{"item_id": fc("", "")["id"], "output_index": at, "delta": p})
		}
		if !sc.bare {
			ev("response.function_call_arguments.done", map[string]any{"item_id": fc("", "")["id"], "output_index": at, "name": c[0], "arguments": c[1]})
		}
		ev("response.output_item.done", map[string]any{"output_index": at, "item": fc("completed", c[1])})
		output = append(output, fc("completed", c[1]))
		at++
	}
	resp["status"], resp["output"] = status, output
	resp["usage"] = map[string]any{"input_tokens": size / 4, "output_tokens": 40, "total_tokens": size/4 + 40,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	if sc.incomplete {
		resp["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	ev("response."+status, map[string]any{"response": resp})
}

// streamShop is a gateway in front of the shop upstream and streamModel,
// whose key is the secret.
func streamShop(t *testing.T) (*shop, *streamModel) {
	t.Helper()
	up, upURL := newShopUpstream(t)
	m := &streamModel{hung: make(chan struct{}, 8)}
	ms := httptest.NewServer(m)
	t.Cleanup(ms.Close)
	g, url, w := wiredGateway(t, fmt.Sprintf("upstreams:\n  - name: up\n    url: %s\nmodel: {base_url: '%s/v1', name: scripted, api_key: %s}\n",
		upURL, ms.URL, streamSecret))
	return &shop{g: g, url: url, up: up, upURL: upURL, wire: w}, m
}

// runStream runs stream.mjs in mode with env, and decodes the JSON line it
// prints last into v.
func runStream(t *testing.T, dir, node, mode string, v any, env ...string) {
	t.Helper()
	src, err := os.ReadFile("testdata/frameworks/stream.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-stream", src)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(append(os.Environ(), "MODE="+mode, "OPENAI_AGENTS_DISABLE_TRACING=1"), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("stream.mjs %s: %v\n%s", mode, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("stream.mjs %s printed (%v):\n%s", mode, err, clip(string(out), 4000))
	}
	if len(lines) > 1 {
		t.Logf("stream.mjs %s also printed:\n%s", mode, clip(strings.Join(lines[:len(lines)-1], "\n"), 3000))
	}
}

// sdkStream is what stream.mjs read of one stream with the openai SDK:
// the texts and arguments its deltas add up to, and those of the answer
// the SDK assembled (finalChatCompletion, finalResponse), if it does.
type sdkStream struct {
	Case      string   `json:"case"`
	Task      string   `json:"task"`
	Error     string   `json:"error"`
	DeltaText string   `json:"deltaText"`
	DeltaArgs []string `json:"deltaArgs"`
	FinalText *string  `json:"finalText"`
	FinalArgs []string `json:"finalArgs"`
	Summary   string   `json:"deltaSummary"` // the Responses API's reasoning summary
	FinalSum  *string  `json:"finalSummary"`
	Names     []string `json:"names"`
	Usage     int      `json:"usage"`
	Sequence  []int    `json:"sequence"`
	Late      []string `json:"late"` // deltas after their part's or item's end
}

// TestSDKStreams: the openai SDK's stream helpers and raw streams, of chat
// completions and of the Responses API, read what reach re-emits of a
// stream that spells the model's key at every cut, or is cut short by the
// token limit at every byte of it: every event parses, the text, reasoning
// summary and arguments the deltas add up to are the model's with the key
// masked, the answer the SDK assembles says the same, the usage comes
// through when asked for (and not when not), and the Responses events
// keep their sequence numbers in order.
func TestSDKStreams(t *testing.T) {
	dir, node := frameworksCache(t)
	s, _ := streamShop(t)
	var tasks []string
	for k := range len(streamSecret) {
		tasks = append(tasks, fmt.Sprintf("sdk:%d", k), fmt.Sprintf("cut:%d", k), fmt.Sprintf("bare:%d", k))
	}
	cases, _ := json.Marshal(tasks)
	var got []sdkStream
	runStream(t, dir, node, "sdk", &got, "MODEL_URL="+s.url+"/v1", "CASES="+string(cases))
	if len(got) != 5*len(tasks) {
		t.Fatalf("%d streams read, want %d", len(got), 5*len(tasks))
	}
	for _, r := range got {
		want := (&streamModel{}).script(r.Task, false)
		text := string(s.g.redactor.Values([]byte(want.text))) // a key cut short may still be masked
		var args []string
		for _, c := range want.calls {
			args = append(args, masked(c[1]))
		}
		if r.Error != "" {
			t.Errorf("%s: %s", r.Case, r.Error)
			continue
		}
		if r.DeltaText != text {
			t.Errorf("%s: the deltas' text = %q, want %q", r.Case, r.DeltaText, text)
		}
		if fmt.Sprint(r.DeltaArgs) != fmt.Sprint(args) {
			t.Errorf("%s: the deltas' arguments = %q, want %q", r.Case, r.DeltaArgs, args)
		}
		if r.FinalText != nil && *r.FinalText != text {
			t.Errorf("%s: the assembled text = %q, want %q", r.Case, *r.FinalText, text)
		}
		if r.FinalText != nil && fmt.Sprint(r.FinalArgs) != fmt.Sprint(args) {
			t.Errorf("%s: the assembled arguments = %q, want %q", r.Case, r.FinalArgs, args)
		}
		if strings.HasPrefix(r.Case, "responses") && r.Summary != masked(want.summary) {
			t.Errorf("%s: the deltas' reasoning summary = %q, want %q", r.Case, r.Summary, masked(want.summary))
		}
		if r.FinalSum != nil && *r.FinalSum != masked(want.summary) {
			t.Errorf("%s: the assembled reasoning summary = %q, want %q", r.Case, *r.FinalSum, masked(want.summary))
		}
		if plain := strings.HasPrefix(r.Case, "chat.plain"); (r.Usage == 0) != plain {
			t.Errorf("%s: usage %d (asked for: %v)", r.Case, r.Usage, !plain)
		}
		if len(r.Late) > 0 {
			t.Errorf("%s: deltas after the end of their part or item: %v", r.Case, r.Late)
		}
		for i := 1; i < len(r.Sequence); i++ {
			if r.Sequence[i] <= r.Sequence[i-1] {
				t.Errorf("%s: sequence numbers %v: %d after %d", r.Case, r.Sequence, r.Sequence[i], r.Sequence[i-1])
				break
			}
		}
	}
}

// TestFrameworksStream: OpenAI Agents' streamed run and the AI SDK's
// streamText, each on its default Responses API and on chat completions, each with the lookup tool through reach's /mcp, read
// a model that streams a call of it with the secret in its arguments and
// then a text that spells the secret: the run completes, its one tool call
// is linked under the turn that chose it, and neither the final text nor
// the text streamed holds the secret.
func TestFrameworksStream(t *testing.T) {
	dir, node := frameworksCache(t)
	for _, mode := range []string{"openai-agents", "openai-agents-chat", "ai-sdk", "ai-sdk-chat"} {
		t.Run(mode, func(t *testing.T) {
			s, m := streamShop(t)
			var r struct {
				OK       bool   `json:"ok"`
				Text     string `json:"text"`
				Streamed string `json:"streamed"`
				Error    string `json:"error"`
			}
			runStream(t, dir, node, mode, &r, "MODEL_URL="+s.url+"/v1", "MCP_URL="+s.url+"/mcp", "TASK=tool")
			if !r.OK {
				t.Fatalf("the run: %+v", r)
			}
			final := masked((&streamModel{}).script("tool", true).text)
			if r.Text != final || !strings.HasSuffix(r.Streamed, final) {
				t.Errorf("the run's text %q, streamed %q; want %q", r.Text, r.Streamed, final)
			}
			if strings.Contains(r.Text+r.Streamed, streamSecret[:8]) {
				t.Errorf("the secret got through: %q %q", r.Text, r.Streamed)
			}
			if n := s.up.called("lookup"); n != 1 {
				t.Errorf("%d lookups ran, want 1", n)
			}
			if n := m.turns.Load(); n != 2 {
				t.Errorf("%d model turns, want 2", n)
			}
			checkOneGraph(t, s.g, 2, 1)
		})
	}
}
