package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
)

// BenchmarkHandedTurn: a model turn through one instance of a cluster on
// PostgreSQL (a throwaway one), whose answer chooses calls tool calls with
// strings string arguments each: each is recorded in the shared store as
// a task a sub-agent may be handed (modelproxy putHanded) before the
// answer passes on. strings=0 (the call's arguments a number) is the turn
// without that write; the rest of the turn (its request begun on the
// store, the first turn's task looked up, its charge on the shared
// ledger) is the same in each.
//
//	go test -run '^$' -bench HandedTurn -benchtime 400x -count 5 ./internal/gateway/
func BenchmarkHandedTurn(b *testing.B) {
	for _, c := range []struct{ calls, strings int }{{1, 0}, {1, 1}, {1, 16}, {4, 4}} {
		b.Run(fmt.Sprintf("calls=%d/strings=%d", c.calls, c.strings), func(b *testing.B) {
			var calls []any
			for k := range c.calls {
				args := map[string]any{}
				if c.strings == 0 {
					args["n"] = 1
				}
				for i := range c.strings {
					args[fmt.Sprintf("a%d", i)] = fmt.Sprintf("a task of %d words, number %d of call %d", 5+i, i, k)
				}
				a, _ := json.Marshal(args)
				calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", k), "type": "function",
					"function": map[string]any{"name": "research", "arguments": string(a)}})
			}
			answer, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "scripted",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant",
					"content": nil, "tool_calls": calls}}},
				"usage": map[string]any{"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}})
			ms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.Write(answer)
			}))
			b.Cleanup(ms.Close)
			cfg, err := config.Parse([]byte(fmt.Sprintf("store: %s\ninstance: a\ninstance_ttl: 10s\nmodel: {base_url: '%s/v1', name: scripted}\n",
				pgtest.Database(b), ms.URL)), os.LookupEnv)
			if err != nil {
				b.Fatal(err)
			}
			url := serveTest(b, newTestGateway(b, cfg)).URL + "/v1/chat/completions"
			body := []byte(`{"model":"scripted","messages":[{"role":"user","content":"research this"}],"tools":[{"type":"function","function":{"name":"research","parameters":{"type":"object"}}}]}`)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("turn: %d", resp.StatusCode)
				}
			}
		})
	}
}
