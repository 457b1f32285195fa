package modelproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/redact"
)

const respSecret = "sk-live-SECRET-9f8e7d"

// fakeResponses is a Responses API endpoint: each answer chooses the
// function lookup with args, says text and sums up its reasoning as
// summary, with usage 40+7; streamed (each text in deltas cut at every
// cuts-th byte) when the request says stream. With logprobs, its text's
// log probabilities go beside it, a token every logprobs bytes.
type fakeResponses struct {
	text, args, summary string
	cut, logprobs       int

	mu     sync.Mutex
	n      int
	paths  []string
	bodies []map[string]any
}

func (f *fakeResponses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.n++
	n := f.n
	f.paths = append(f.paths, r.URL.Path)
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	id, call := fmt.Sprintf("resp_%d", n), fmt.Sprintf("call_%d", n)
	usage := map[string]any{"input_tokens": 30, "output_tokens": 17, "total_tokens": 47}
	reasoning := map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{map[string]any{"type": "summary_text", "text": f.summary}}}
	part := map[string]any{"type": "output_text", "text": f.text, "annotations": []any{}}
	if f.logprobs > 0 {
		part["logprobs"] = logprobTokens(f.text, f.logprobs)
	}
	msg := map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": []any{part}}
	fc := map[string]any{"type": "function_call", "id": "fc_1", "call_id": call, "name": "lookup", "arguments": f.args, "status": "completed"}
	resp := map[string]any{"id": id, "object": "response", "status": "completed", "model": "m", "output": []any{reasoning, msg, fc}, "usage": usage}
	if body["stream"] != true {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	seq := 0
	send := func(ev map[string]any) {
		ev["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
	}
	deltas := func(typ string, place map[string]any, text string) {
		for i := 0; i < len(text); i += f.cut {
			ev := map[string]any{"type": typ, "delta": text[i:min(i+f.cut, len(text))]}
			if typ == "response.output_text.delta" && f.logprobs > 0 {
				ev["logprobs"] = logprobTokens(text[i:min(i+f.cut, len(text))], f.logprobs)
			}
			for k, v := range place {
				ev[k] = v
			}
			send(ev)
		}
	}
	send(map[string]any{"type": "response.created", "response": map[string]any{"id": id, "status": "in_progress", "output": []any{}}})
	send(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}}})
	place := map[string]any{"item_id": "rs_1", "output_index": 0, "summary_index": 0}
	deltas("response.reasoning_summary_text.delta", place, f.summary)
	send(map[string]any{"type": "response.reasoning_summary_text.done", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "text": f.summary})
	send(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": reasoning})
	send(map[string]any{"type": "response.output_item.added", "output_index": 1, "item": map[string]any{"type": "message", "id": "msg_1", "content": []any{}}})
	deltas("response.output_text.delta", map[string]any{"item_id": "msg_1", "output_index": 1, "content_index": 0}, f.text)
	textDone := map[string]any{"type": "response.output_text.done", "item_id": "msg_1", "output_index": 1, "content_index": 0, "text": f.text}
	if f.logprobs > 0 {
		textDone["logprobs"] = part["logprobs"]
	}
	send(textDone)
	send(map[string]any{"type": "response.output_item.done", "output_index": 1, "item": msg})
	send(map[string]any{"type": "response.output_item.added", "output_index": 2,
		"item": map[string]any{"type": "function_call", "id": "fc_1", "call_id": call, "name": "lookup", "arguments": ""}})
	deltas("response.function_call_arguments.delta", map[string]any{"item_id": "fc_1", "output_index": 2}, f.args)
	// No .done for the arguments: the item's done event ends them.
	send(map[string]any{"type": "response.output_item.done", "output_index": 2, "item": fc})
	send(map[string]any{"type": "response.completed", "response": resp})
}

// newResponsesProxy is a proxy in front of upstream that masks respSecret,
// with requests of the budget given.
func newResponsesProxy(t *testing.T, upstream http.Handler, budget *reach.Budget) (*httptest.Server, *reach.Runtime, *link.ModelChoices) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	red, err := redact.New(&redact.Options{Secrets: []string{respSecret}})
	if err != nil {
		t.Fatal(err)
	}
	rt := reach.New(nil)
	choices := &link.ModelChoices{}
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Redactor: red, Choices: choices, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: budget})})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, rt, choices
}

func postResponses(t *testing.T, url, body string, h map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/responses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// modelTurns returns the model frames of the request id.
func modelTurns(rt *reach.Runtime, id string) []*reach.Frame {
	var fs []*reach.Frame
	for _, r := range rt.Requests() {
		if r.ID() != id {
			continue
		}
		for _, f := range r.Frames() {
			if f.Kind == reach.ModelFrame {
				fs = append(fs, f)
			}
		}
	}
	return fs
}

// TestResponses: a Responses API answer comes back from base_url/responses
// with the secret masked in its text, its function call's arguments and
// its reasoning summary; the turn is charged the answer's usage; its
// function call links to it by call_id; and a next turn joins its request
// both when its input holds that call's items and when it names the
// answer by previous_response_id (its input then only the call's output).
func TestResponses(t *testing.T) {
	fake := &fakeResponses{text: "the key is " + respSecret, args: `{"q":"` + respSecret + `"}`, summary: "I saw " + respSecret}
	srv, rt, choices := newResponsesProxy(t, fake, nil)

	resp, b := postResponses(t, srv.URL, `{"model":"m","input":"look it up"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("first turn: %d %s", resp.StatusCode, b)
	}
	if fake.paths[0] != "/v1/responses" {
		t.Errorf("the endpoint was asked at %s, want /v1/responses", fake.paths[0])
	}
	if strings.Contains(b, "9f8e7d") || strings.Count(b, "[REDACTED]") != 3 {
		t.Errorf("the answer, masked: %s", b)
	}
	req := resp.Header.Get(link.HeaderRequest)
	turns := modelTurns(rt, req)
	if len(turns) != 1 || turns[0].Tokens() != 47 {
		t.Fatalf("request %s has model turns %v, want one charged 47 tokens", req, turns)
	}
	if f := choices.Turn("call_1", "", nil); f != turns[0] {
		t.Errorf("call_1 links to %v, want the turn that chose it", f)
	}
	// The agent's MCP call of it sends the arguments it read: masked.
	if f, id := choices.Match("lookup", []byte(`{"q":"[REDACTED]"}`), nil, ""); f != turns[0] || id != "call_1" {
		t.Errorf("an MCP call of lookup with the arguments the agent read links to %v (%q), want the turn that chose it (call_1)", f, id)
	}

	// The framework sends the whole history back: the call and its output.
	resp, b = postResponses(t, srv.URL, `{"model":"m","input":[{"role":"user","content":"look it up"},`+
		`{"type":"function_call","call_id":"call_1","name":"lookup","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"none"}]}`, nil)
	if got := resp.Header.Get(link.HeaderRequest); resp.StatusCode != 200 || got != req {
		t.Fatalf("a turn whose input holds call_1: %d request %q, want %s (%s)", resp.StatusCode, got, req, b)
	}
	// The endpoint keeps the history: only the new output, and the answer it follows.
	var second struct {
		ID string `json:"id"`
	}
	json.Unmarshal([]byte(b), &second)
	resp, b = postResponses(t, srv.URL, `{"model":"m","previous_response_id":"`+second.ID+`","input":[{"type":"function_call_output","call_id":"call_2","output":"x"}]}`, nil)
	if got := resp.Header.Get(link.HeaderRequest); resp.StatusCode != 200 || got != req {
		t.Fatalf("a turn after %s: %d request %q, want %s (%s)", second.ID, resp.StatusCode, got, req, b)
	}
	if n := len(modelTurns(rt, req)); n != 3 {
		t.Errorf("request %s has %d model turns, want 3", req, n)
	}
	// An answer reach never gave: refused (owners.go), in no request.
	resp, _ = postResponses(t, srv.URL, `{"model":"m","previous_response_id":"resp_other","input":"hi"}`, nil)
	if got := resp.Header.Get(link.HeaderRequest); resp.StatusCode != 400 || got != "" {
		t.Errorf("a turn after an unknown answer: %d, request %q; want 400 in none", resp.StatusCode, got)
	}
}

// sseEvent is one event of a stream as the client reads it.
type sseEvent struct {
	name string
	data map[string]any
}

func readEvents(t *testing.T, body string) []sseEvent {
	t.Helper()
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, MaxAnswer)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("an event's data is not JSON: %s", line)
			}
		case line == "" && cur.data != nil:
			if cur.name != cur.data["type"] {
				t.Errorf("event %q carries a %v", cur.name, cur.data["type"])
			}
			evs = append(evs, cur)
			cur = sseEvent{}
		}
	}
	return evs
}

// TestResponsesStreamMasksSecretsSplitAcrossDeltas: a secret spelled
// across the .delta events of an output text, a reasoning summary and a
// function call's arguments, cut at every width, reaches the client
// masked: no part of it in any event, each text's deltas adding up to the
// masked text, which its .done event, the item's done event and
// response.completed repeat; what a text still holds at its end (a text
// that ends as the secret begins) goes out as a delta before its .done,
// and the events after it are numbered on (0, 1, 2, ... still); the call
// links to the turn, and the turn is charged the usage of
// response.completed.
func TestResponsesStreamMasksSecretsSplitAcrossDeltas(t *testing.T) {
	text, args, summary := "the key is "+respSecret+" ok, thanks", `{"q":"`+respSecret+`"}`, "I saw "+respSecret
	mask := func(s string) string { return strings.ReplaceAll(s, respSecret, "[REDACTED]") }
	for _, cut := range []int{1, 3, 7, 16} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			fake := &fakeResponses{text: text, args: args, summary: summary, cut: cut}
			srv, rt, choices := newResponsesProxy(t, fake, nil)
			resp, b := postResponses(t, srv.URL, `{"model":"m","input":"go","stream":true}`, nil)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			for _, part := range []string{"9f8e7d", "SECRET-9", "T-9f"} {
				if strings.Contains(b, part) {
					t.Fatalf("%q of the secret got through:\n%s", part, b)
				}
			}
			got := map[string]string{}
			var completed map[string]any
			done := map[any]bool{} // the items whose output_item.done has passed
			for i, ev := range readEvents(t, b) {
				typ, _ := ev.data["type"].(string)
				if n, _ := ev.data["sequence_number"].(float64); n != float64(i) {
					t.Errorf("event %d (%s) is numbered %v", i, typ, ev.data["sequence_number"])
				}
				if d, ok := ev.data["delta"].(string); ok {
					got[typ] += d
					if item := ev.data["item_id"]; item == nil || done[item] || ev.data["sequence_number"] == nil {
						t.Errorf("a delta of item %v after its end, or without its number: %v", item, ev.data)
					}
				}
				if item, _ := ev.data["item"].(map[string]any); typ == "response.output_item.done" && item != nil {
					done[item["id"]] = true
				}
				if typ == "response.completed" {
					completed = ev.data
				}
			}
			for typ, want := range map[string]string{"response.output_text.delta": mask(text), "response.reasoning_summary_text.delta": mask(summary),
				"response.function_call_arguments.delta": mask(args)} {
				if got[typ] != want {
					t.Errorf("the %s events add up to %q, want %q", typ, got[typ], want)
				}
			}
			if completed == nil || !strings.Contains(fmt.Sprint(completed), mask(text)) {
				t.Errorf("response.completed: %v", completed)
			}
			req := resp.Header.Get(link.HeaderRequest)
			turns := modelTurns(rt, req)
			if len(turns) != 1 || turns[0].Tokens() != 47 {
				t.Fatalf("model turns %v, want one charged 47 tokens", turns)
			}
			if f := choices.Turn("call_1", "", nil); f != turns[0] {
				t.Errorf("call_1 links to %v, want the streamed turn", f)
			}
			if f, _ := choices.Match("lookup", []byte(mask(args)), nil, ""); f != turns[0] {
				t.Errorf("an MCP call of lookup with the arguments the agent read links to %v, want the streamed turn", f)
			}
			if f := choices.Responded("resp_1", nil); f != turns[0] {
				t.Errorf("resp_1 is remembered as %v, want the streamed turn", f)
			}
		})
	}
}

// TestResponsesBudget: a turn's max_output_tokens is capped at what the
// token budget has left once the prompt is counted, and the model told to
// finish; a turn past the budget is refused as a chat completion is: 402
// budget_exceeded, x-should-retry false, telling the model to finish.
func TestResponsesBudget(t *testing.T) {
	fake := &fakeResponses{text: "ok", args: "{}", summary: "s"}
	srv, _, _ := newResponsesProxy(t, fake, &reach.Budget{Tokens: 100})
	h := map[string]string{link.HeaderRequest: "b1"}
	resp, b := postResponses(t, srv.URL, `{"model":"m","input":"go","max_output_tokens":4096}`, h)
	if resp.StatusCode != 200 {
		t.Fatalf("first turn: %d %s", resp.StatusCode, b)
	}
	capped, _ := fake.bodies[0]["max_output_tokens"].(float64)
	if capped <= 0 || capped >= 100 {
		t.Errorf("max_output_tokens = %v, want it capped under the 100 tokens left", fake.bodies[0]["max_output_tokens"])
	}
	input, _ := fake.bodies[0]["input"].([]any)
	if len(input) != 2 || !strings.Contains(fmt.Sprint(input[1]), "Finish now") {
		t.Errorf("input = %v, want the user's text and the note to finish", fake.bodies[0]["input"])
	}
	// 47 of 100 spent; the next turn spends 47 more, and the 6 left are less than the prompt.
	postResponses(t, srv.URL, `{"model":"m","input":"go"}`, h)
	resp, b = postResponses(t, srv.URL, `{"model":"m","input":"go"}`, h)
	var out struct {
		Error struct{ Type, Code, Message string }
	}
	json.Unmarshal([]byte(b), &out)
	if resp.StatusCode != http.StatusPaymentRequired || out.Error.Type != "budget_exceeded" || !strings.Contains(out.Error.Message, "finish with what you have") ||
		resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("over budget: %d %s (x-should-retry %q), want 402 budget_exceeded not to be retried", resp.StatusCode, b, resp.Header.Get("X-Should-Retry"))
	}
	if fake.n != 2 {
		t.Errorf("the model was asked %d times, want 2", fake.n)
	}
}

// logprobTokens is the logprobs list of text, a token every w bytes.
func logprobTokens(text string, w int) []any {
	var l []any
	for i := 0; i < len(text); i += w {
		tok := text[i:min(i+w, len(text))]
		var bs []int
		for _, c := range []byte(tok) {
			bs = append(bs, int(c))
		}
		l = append(l, map[string]any{"token": tok, "bytes": bs, "logprob": -0.5,
			"top_logprobs": []any{map[string]any{"token": tok, "bytes": bs, "logprob": -0.5}}})
	}
	return l
}

// tokensIn returns the text each logprobs list in v spells, its tokens
// joined, in the order they are found.
func tokensIn(v any) []string {
	var lists []string
	switch v := v.(type) {
	case map[string]any:
		if l, ok := v["logprobs"].([]any); ok {
			var b strings.Builder
			for _, e := range l {
				el, _ := e.(map[string]any)
				tok, _ := el["token"].(string)
				b.WriteString(tok)
			}
			lists = append(lists, b.String())
		}
		for k, x := range v {
			if k != "logprobs" {
				lists = append(lists, tokensIn(x)...)
			}
		}
	case []any:
		for _, x := range v {
			lists = append(lists, tokensIn(x)...)
		}
	}
	return lists
}

// TestResponsesLogprobsMasked: an output text's log probabilities
// (include: message.output_text.logprobs) spell a secret token by token,
// which the text shows masked. In a whole answer the tokens of its text
// spell it masked; in a stream, so do the tokens of its deltas, joined
// (the tokens of a piece that may begin it held back as the text is), and
// the whole lists of its .done, its item's done event and
// response.completed. The secret was in the tokens, in pieces, in both.
func TestResponsesLogprobsMasked(t *testing.T) {
	text := "the key is " + respSecret + " ok"
	masked := strings.ReplaceAll(text, respSecret, "[REDACTED]")
	req := `{"model":"m","input":"go","include":["message.output_text.logprobs"]`
	for _, width := range []int{1, 3, 5} {
		t.Run(fmt.Sprint("whole/", width), func(t *testing.T) {
			fake := &fakeResponses{text: text, args: "{}", summary: "s", logprobs: width}
			srv, _, _ := newResponsesProxy(t, fake, nil)
			resp, b := postResponses(t, srv.URL, req+"}", nil)
			var v any
			if resp.StatusCode != 200 || json.Unmarshal([]byte(b), &v) != nil {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if got := tokensIn(v); len(got) != 1 || got[0] != masked {
				t.Errorf("the answer's tokens spell %q, want %q", got, masked)
			}
		})
		for _, cut := range []int{1, 4, 7} {
			t.Run(fmt.Sprint("stream/", width, "/", cut), func(t *testing.T) {
				fake := &fakeResponses{text: text, args: "{}", summary: "s", cut: cut, logprobs: width}
				srv, _, _ := newResponsesProxy(t, fake, nil)
				resp, b := postResponses(t, srv.URL, req+`,"stream":true}`, nil)
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, b)
				}
				var deltas strings.Builder
				for _, ev := range readEvents(t, b) {
					typ, _ := ev.data["type"].(string)
					if typ == "response.output_text.delta" {
						if _, ok := ev.data["logprobs"].([]any); !ok {
							t.Errorf("a delta without its logprobs: %v", ev.data)
							continue
						}
						deltas.WriteString(tokensIn(ev.data)[0])
						continue
					}
					for _, got := range tokensIn(ev.data) {
						if got != masked {
							t.Errorf("the tokens of %s spell %q, want %q", typ, got, masked)
						}
					}
				}
				if deltas.String() != masked {
					t.Errorf("the deltas' tokens spell %q, want %q", deltas.String(), masked)
				}
			})
		}
	}
}

// TestResponsesBudgetCountsKeptHistory: a turn that names
// previous_response_id sends only its new input, and the endpoint adds the
// history it keeps, at least the tokens of the turn that gave that answer.
// With fewer tokens left than that and the new input, the turn is refused
// as a prompt too large for the budget; it was sent, its answer capped at
// what the new input alone left, and spent the kept history on top.
func TestResponsesBudgetCountsKeptHistory(t *testing.T) {
	fake := &fakeResponses{text: "ok", args: "{}", summary: "s"}
	srv, _, _ := newResponsesProxy(t, fake, &reach.Budget{Tokens: 100})
	h := map[string]string{link.HeaderRequest: "k1"}
	if resp, b := postResponses(t, srv.URL, `{"model":"m","input":"go"}`, h); resp.StatusCode != 200 {
		t.Fatalf("first turn: %d %s", resp.StatusCode, b)
	}
	// 47 of 100 spent: resp_1's history is 47 tokens, and 53 are left.
	resp, b := postResponses(t, srv.URL, `{"model":"m","previous_response_id":"resp_1","input":"go on"}`, h)
	var out struct {
		Error struct{ Type, Code string }
	}
	json.Unmarshal([]byte(b), &out)
	if resp.StatusCode != http.StatusPaymentRequired || out.Error.Code != "budget_tokens" {
		t.Errorf("a turn after resp_1 with 53 tokens left: %d %s, want 402 budget_tokens", resp.StatusCode, b)
	}
	if fake.n != 1 {
		t.Errorf("the model was asked %d times, want 1", fake.n)
	}
	// A turn that names no previous answer and fits is still sent.
	if resp, b := postResponses(t, srv.URL, `{"model":"m","input":"go"}`, h); resp.StatusCode != 200 {
		t.Errorf("a short turn without previous_response_id: %d %s", resp.StatusCode, b)
	}
}

// TestResponsesBudgetCountsKeptHistoryOfEndedRequest: a conversation goes
// on in a new request once its own ended (a chat's next message, a new
// run): the history the endpoint keeps for the answer it names is counted
// there too, and a new request whose budget is less is refused, not sent.
func TestResponsesBudgetCountsKeptHistoryOfEndedRequest(t *testing.T) {
	fake := &fakeResponses{text: "ok", args: "{}", summary: "s"}
	srv, rt, _ := newResponsesProxy(t, fake, &reach.Budget{Tokens: 50})
	resp, b := postResponses(t, srv.URL, `{"model":"m","input":"go"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("first turn: %d %s", resp.StatusCode, b)
	}
	for _, r := range rt.Requests() {
		if r.ID() == resp.Header.Get(link.HeaderRequest) {
			r.End()
		}
	}
	// resp_1's history is 47 tokens; a new request has 50.
	resp, b = postResponses(t, srv.URL, `{"model":"m","previous_response_id":"resp_1","input":"go on"}`, nil)
	if resp.StatusCode != http.StatusPaymentRequired {
		t.Errorf("a turn after resp_1 in a new request of 50 tokens: %d %s, want 402", resp.StatusCode, b)
	}
	if fake.n != 1 {
		t.Errorf("the model was asked %d times, want 1", fake.n)
	}
}

// TestResponsesBackgroundRefused: a turn asked in the background is
// refused with a 400 that says why, and the model is not asked: the
// endpoint would answer it queued, its output fetched later at GET
// /v1/responses/{id}, which reach does not serve, and its tokens never
// charged.
func TestResponsesBackgroundRefused(t *testing.T) {
	fake := &fakeResponses{text: "ok", args: "{}", summary: "s", cut: 1}
	srv, _, _ := newResponsesProxy(t, fake, nil)
	for _, body := range []string{`{"model":"m","input":"go","background":true}`, `{"model":"m","input":"go","background":true,"stream":true}`} {
		resp, b := postResponses(t, srv.URL, body, nil)
		var out struct {
			Error struct{ Type, Code string }
		}
		json.Unmarshal([]byte(b), &out)
		if resp.StatusCode != http.StatusBadRequest || out.Error.Code != "background_unsupported" {
			t.Errorf("%s: %d %s, want 400 background_unsupported", body, resp.StatusCode, b)
		}
	}
	if fake.n != 0 {
		t.Errorf("the model was asked %d times, want none", fake.n)
	}
	if resp, b := postResponses(t, srv.URL, `{"model":"m","input":"go","background":false}`, nil); resp.StatusCode != 200 {
		t.Errorf("background false: %d %s", resp.StatusCode, b)
	}
}

// TestResponsesStreamShellCommandsPlaced: a shell call's commands stream
// as texts of their own, placed by command_index. The end of one that may
// begin a secret ("ls" ends with the "s" of "sk-") is held back and goes
// out before the command's .done event with that command's command_index:
// it went out without one, which the OpenAI SDK cannot place, and each
// command's deltas no longer added up to it.
func TestResponsesStreamShellCommandsPlaced(t *testing.T) {
	commands := []string{"ls", "cat notes && echo " + respSecret}
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		seq := 0
		send := func(ev map[string]any) {
			ev["sequence_number"] = seq
			seq++
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
		}
		item := map[string]any{"type": "shell_call", "id": "sh_1", "call_id": "call_sh", "status": "in_progress", "action": map[string]any{"commands": []any{}}}
		send(map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_sh", "status": "in_progress", "output": []any{}}})
		send(map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
		for i, c := range commands {
			send(map[string]any{"type": "response.shell_call_command.added", "output_index": 0, "command_index": i, "command": ""})
			for j := 0; j < len(c); j += 5 {
				send(map[string]any{"type": "response.shell_call_command.delta", "output_index": 0, "command_index": i, "delta": c[j:min(j+5, len(c))]})
			}
			send(map[string]any{"type": "response.shell_call_command.done", "output_index": 0, "command_index": i, "command": c})
		}
		done := map[string]any{"type": "shell_call", "id": "sh_1", "call_id": "call_sh", "status": "completed", "action": map[string]any{"commands": commands}}
		send(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": done})
		send(map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_sh", "status": "completed", "output": []any{done},
			"usage": map[string]any{"input_tokens": 5, "output_tokens": 5}}})
	})
	srv, _, _ := newResponsesProxy(t, upstream, nil)
	resp, b := postResponses(t, srv.URL, `{"model":"m","input":"go","stream":true}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if strings.Contains(b, "9f8e7d") {
		t.Fatalf("the secret got through:\n%s", b)
	}
	got := map[string]string{}
	for _, ev := range readEvents(t, b) {
		if ev.data["type"] != "response.shell_call_command.delta" {
			continue
		}
		i, ok := ev.data["command_index"].(float64)
		if !ok {
			t.Errorf("a command's delta without its command_index: %v", ev.data)
			continue
		}
		got[fmt.Sprint(i)] += ev.data["delta"].(string)
	}
	want := map[string]string{"0": commands[0], "1": strings.ReplaceAll(commands[1], respSecret, "[REDACTED]")}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("command %s's deltas add up to %q, want %q", i, got[i], w)
		}
	}
}

// TestResponsesStreamLargeEvent: a generated image comes whole in its
// item's done event and again in response.completed, each one line of some
// MiB; the stream goes on through them to its end, and the turn is charged
// its usage.
func TestResponsesStreamLargeEvent(t *testing.T) {
	image := strings.Repeat("iVBORw0KGgo", 5<<20/11) // 5 MiB of base64
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		item := map[string]any{"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": image}
		resp := map[string]any{"id": "resp_ig", "status": "completed", "output": []any{item}, "usage": map[string]any{"input_tokens": 30, "output_tokens": 20}}
		for i, ev := range []map[string]any{
			{"type": "response.created", "response": map[string]any{"id": "resp_ig", "status": "in_progress", "output": []any{}}},
			{"type": "response.output_item.done", "output_index": 0, "item": item},
			{"type": "response.completed", "response": resp},
		} {
			ev["sequence_number"] = i
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
		}
	})
	srv, rt, _ := newResponsesProxy(t, upstream, nil)
	resp, b := postResponses(t, srv.URL, `{"model":"m","input":"draw","stream":true}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %.200s", resp.StatusCode, b)
	}
	evs := readEvents(t, b)
	if len(evs) != 3 || evs[2].data["type"] != "response.completed" {
		t.Fatalf("%d events passed, want the 3, response.completed last", len(evs))
	}
	turns := modelTurns(rt, resp.Header.Get(link.HeaderRequest))
	if len(turns) != 1 || turns[0].Tokens() != 50 {
		t.Errorf("model turns %v, want one charged the 50 tokens of its usage", turns)
	}
}

// TestFlagNotBooleanRefused: a turn whose stream (or a Responses turn's
// background) is not a JSON boolean is refused, the model not asked; so is
// a member reach reads spelled in another case. reach
// read such a value as false, while the servers behind the route read it
// as they do: pydantic's lax mode (vLLM) takes "true", "1" and 1 for true,
// and a proxy that tests the value's truth (LiteLLM) takes even "false".
// The endpoint then streamed an answer reach passed on whole, as one
// text: a secret its deltas spelled in pieces went out unmasked, its tool
// calls unlinked; and a background turn ran past reach, its answer
// fetched later, uncharged and unmasked.
func TestFlagNotBooleanRefused(t *testing.T) {
	var asked int
	var mu sync.Mutex
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"resp_1","object":"response","status":"completed","model":"m","output":[],"choices":[],"usage":{"input_tokens":1,"output_tokens":1,"prompt_tokens":1,"completion_tokens":1}}`)
	})
	srv, _, _ := newResponsesProxy(t, up, nil)
	post := func(route, body string) (int, string, string) {
		req, _ := http.NewRequest("POST", srv.URL+route, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Error struct{ Code, Param string }
		}
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Error.Code, out.Error.Param
	}
	for _, tc := range []struct{ route, member, value string }{
		{"/v1/chat/completions", "stream", `"true"`},
		{"/v1/chat/completions", "stream", `1`},
		{"/v1/chat/completions", "stream", `"false"`},
		{"/v1/responses", "stream", `"yes"`},
		{"/v1/responses", "background", `"true"`},
		{"/v1/responses", "background", `1`},
	} {
		body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"go"}],"input":"go",%q:%s}`, tc.member, tc.value)
		status, code, param := post(tc.route, body)
		if status != http.StatusBadRequest || code != "invalid_type" || param != tc.member {
			t.Errorf("%s %s: %d %s (param %q), want 400 invalid_type naming %s", tc.route, body, status, code, param, tc.member)
		}
	}
	// In another case, a member reach reads is one it does not see, and
	// that a server in Go (Ollama's) reads as that member.
	for _, tc := range []struct{ route, body, member string }{
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"}],"Stream":true}`, "Stream"},
		{"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"}],"max_tokens":10,"MAX_TOKENS":100000}`, "MAX_TOKENS"},
		{"/v1/responses", `{"model":"m","input":"go","Previous_Response_ID":"resp_other"}`, "Previous_Response_ID"},
		{"/v1/responses", `{"model":"m","input":"go","bac\u212aground":true}`, "bac\u212aground"},
	} {
		status, code, param := post(tc.route, tc.body)
		want := tc.member
		json.Unmarshal([]byte(`"`+tc.member+`"`), &want)
		if status != http.StatusBadRequest || code != "unknown_parameter" || param != want {
			t.Errorf("%s %s: %d %s (param %q), want 400 unknown_parameter naming %s", tc.route, tc.body, status, code, param, want)
		}
	}
	if asked != 0 {
		t.Errorf("the model was asked %d times, want none", asked)
	}
	for _, body := range []string{`{"model":"m","input":"go","stream":null}`, `{"model":"m","input":"go","stream":false,"background":null}`} {
		if status, code, _ := post("/v1/responses", body); status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", body, status, code)
		}
	}
}

// TestResponsesStreamDataOnSeveralLines: an event whose data the endpoint
// writes on several lines reaches the client as the client would read it
// from the endpoint, its lines joined with a line feed (the SSE format's
// join, as the chat stream's): a JSON event pretty-printed over lines, a
// text event of two lines, and an event whose lines, joined without the
// line feed, would read as other JSON than the client reads.
func TestResponsesStreamDataOnSeveralLines(t *testing.T) {
	var sent strings.Builder
	sent.WriteString("event: response.created\ndata: {\"type\":\"response.created\",\ndata: \"sequence_number\":0,\ndata: \"response\":{\"id\":\"resp_ml\",\"status\":\"in_progress\",\"output\":[]}}\n\n")
	sent.WriteString("event: note\ndata: line one\ndata: line two\n\n")
	// Joined with a line feed this is no JSON ("1\n2"); joined without,
	// its number would read as 12.
	sent.WriteString("event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1\ndata: 2}\n\n")
	sent.WriteString("event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3,\ndata: \"response\":{\"id\":\"resp_ml\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}}\n\n")
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sent.String())
	})
	srv, _, _ := newResponsesProxy(t, upstream, nil)
	resp, b := postResponses(t, srv.URL, `{"model":"m","input":"hi","stream":true}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %.200s", resp.StatusCode, b)
	}
	want := clientEvents([]byte(sent.String()))
	got := clientEvents([]byte(b))
	if !slices.Equal(got, want) {
		t.Errorf("the events' data read by the client:\n%q\nwant, as from the endpoint:\n%q", got, want)
	}
}
