package modelproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// hostileJSON are answers' tool-call arguments and contents a model (or an
// upstream in its place) may send: nested 10^5 deep, wide, numbers past
// float64, invalid UTF-8, duplicate keys.
func hostileJSON() map[string]string {
	deep := strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)
	deepArr := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	var wide strings.Builder
	wide.WriteString("{")
	for i := range 100000 {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `"k%d":%d`, i, i)
	}
	wide.WriteString("}")
	return map[string]string{
		"deep object":    deep,
		"deep array":     `{"x":` + deepArr + `}`,
		"wide object":    wide.String(),
		"huge number":    `{"n":1` + strings.Repeat("0", 100000) + `,"m":1e999999,"o":-1e-999999}`,
		"invalid UTF-8":  "{\"s\":\"\xff\xfe\xc3\x28\",\"\xff\":1}",
		"duplicate keys": `{"a":1,"a":2,"A":3,"a":{"a":1,"a":2}}`,
	}
}

// TestHostileJSONFromModel: a model answering tool calls whose arguments
// (and a text whose ReAct block) are any of hostileJSON, whole and
// streamed, through the proxy: the answer is passed on as the model sent
// it, with no panic and no stack blowup (reach's own decoders bound their
// depth: callgraph.MaxDepth, encoding/json's 10,000).
func TestHostileJSONFromModel(t *testing.T) {
	for name, args := range hostileJSON() {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				a, _ := json.Marshal(args)
				text, _ := json.Marshal(`{"action":"up__lookup","actionInput":` + args + `}`)
				var body string
				if stream {
					body = `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"up__lookup","arguments":` + string(a) + `}}]},"finish_reason":null}]}` + "\n\n" +
						`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":1,"delta":{"content":` + string(text) + `},"finish_reason":"stop"},{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}` + "\n\n" +
						"data: [DONE]\n\n"
				} else {
					body = `{"id":"c1","object":"chat.completion","model":"m","choices":[` +
						`{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"up__lookup","arguments":` + string(a) + `}}]},"finish_reason":"tool_calls"},` +
						`{"index":1,"message":{"role":"assistant","content":` + string(text) + `},"finish_reason":"stop"}],` +
						`"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`
				}
				srv, _ := fallbackProxy(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					if stream {
						w.Header().Set("Content-Type", "text/event-stream")
					} else {
						w.Header().Set("Content-Type", "application/json")
					}
					io.WriteString(w, body)
				}), false)
				req := `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]` + map[bool]string{true: `,"stream":true`, false: ""}[stream] + `}`
				resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(req))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("answer: %d %.300s", resp.StatusCode, got)
				}
				if !strings.Contains(string(got), string(a)[:min(len(a), 40)]) {
					t.Errorf("the arguments were not passed on as sent: %.300s", got)
				}
			})
		}
	}
}
