package gateway

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestAttack25ModelNulls (an attack that held): a model endpoint that
// writes nulls where OpenAI's API has objects (a choice, a message, a
// tool call, its function, a delta, log probabilities, usage details, the
// whole answer or chunk; on the Responses API an output item, a delta, a
// completed response) gets its answer passed on to the client, whole or
// streamed, and the gateway goes on serving.
func TestAttack25ModelNulls(t *testing.T) {
	answers := []struct{ ct, body string }{
		{"application/json", `{"choices":[null]}`},
		{"application/json", `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[null,{"id":"t","type":"function","function":{"name":"search_kb","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`},
		{"application/json", `{"choices":[{"message":null}]}`},
		{"application/json", `{"choices":[{"message":{"tool_calls":[{"function":null}]}}]}`},
		{"application/json", `{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens_details":null,"completion_tokens_details":null}}`},
		{"application/json", `{"choices":[{"message":{"content":"x"},"logprobs":{"content":[null,{"token":null,"top_logprobs":[null]}]}}]}`},
		{"application/json", `{"choices":[{"message":{"content":[null],"audio":null,"refusal":null}}]}`},
		{"application/json", `null`},
		{"application/json", `[]`},
		{"text/event-stream", "data: {\"choices\":[null]}\n\ndata: [DONE]\n\n"},
		{"text/event-stream", "data: {\"choices\":[{\"delta\":{\"tool_calls\":[null]}}]}\n\ndata: [DONE]\n\n"},
		{"text/event-stream", "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":null}]}}]}\n\ndata: [DONE]\n\n"},
		{"text/event-stream", "data: {\"choices\":[{\"delta\":null}]}\n\ndata: [DONE]\n\n"},
		{"text/event-stream", "data: null\n\ndata: [DONE]\n\n"},
		{"text/event-stream", "data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"logprobs\":{\"content\":[null]}}],\"usage\":null}\n\ndata: [DONE]\n\n"},
	}
	responses := []struct{ ct, body string }{
		{"application/json", `{"id":"r1","object":"response","output":[null]}`},
		{"application/json", `{"id":"r2","object":"response","output":[{"type":"function_call","name":null,"arguments":null,"call_id":null},{"type":"message","content":[null]}],"usage":null}`},
		{"application/json", `{"id":"r3","object":"response","output":null,"usage":{"input_tokens_details":null,"output_tokens_details":null}}`},
		{"text/event-stream", "data: {\"type\":\"response.output_item.added\",\"item\":null}\n\ndata: {\"type\":\"response.completed\",\"response\":null}\n\n"},
		{"text/event-stream", "data: {\"type\":\"response.output_text.delta\",\"delta\":null,\"item_id\":null}\n\ndata: {\"type\":\"response.function_call_arguments.delta\",\"delta\":null}\n\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"name\":null}}\n\n"},
		{"text/event-stream", "data: {\"type\":\"response.completed\",\"response\":{\"output\":[null],\"usage\":null}}\n\n"},
	}
	var i atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		a := answers[int(i.Load())]
		w.Header().Set("Content-Type", a.ct)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(model.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf("model:\n  base_url: %s/v1\n  api_key: sk-primary\n  name: main\nexamples: true\n", model.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	for k, a := range responses {
		answers = append(answers, a)
		i.Store(int32(len(answers) - 1))
		stream := strings.HasPrefix(a.ct, "text/")
		req, _ := http.NewRequest("POST", srv.URL+"/v1/responses", strings.NewReader(fmt.Sprintf(`{"stream":%v,"input":"hi"}`, stream)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("responses %d: %v", k, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := a.body[:min(len(a.body), 30)]; resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("responses answer %d (%s): %d %s", k, a.body, resp.StatusCode, b)
		}
	}
	answers = answers[:len(answers)-len(responses)]
	for k, a := range answers {
		i.Store(int32(k))
		stream := strings.HasPrefix(a.ct, "text/")
		resp, b := postChat(t, srv.URL, fmt.Sprintf(`{"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream),
			map[string]string{"Authorization": "Bearer client-key"})
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), strings.TrimSuffix(strings.SplitN(a.body, "\n", 2)[0], "]}")) {
			t.Errorf("answer %d (%s): %d %s", k, a.body, resp.StatusCode, b)
		}
	}
}
