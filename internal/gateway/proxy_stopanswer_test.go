package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// TestModelProxyStoppedWhileAnswering: a request stopped while its model
// is answering (its status and the answer's start already passed on, the
// rest not yet come) tells the client that the request was stopped and not
// to retry, as a stop before the answer does (403 request_stopped): in a
// chat stream's error chunk, in the Responses API's error event, and, for
// an answer not streamed, as the 403 itself. Each was a broken answer, to
// be sent again: a stream's "Send the request again" (server_error), and a
// whole answer's 502, which the openai SDKs retry.
func TestModelProxyStoppedWhileAnswering(t *testing.T) {
	for _, c := range []struct{ name, path, body string }{
		{"chat stream", "chat/completions", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses stream", "responses", `{"model":"fake","stream":true,"input":"hi"}`},
		{"whole", "chat/completions", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			asked := make(chan struct{}, 1)
			model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				switch {
				case !strings.Contains(c.body, `"stream":true`):
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hel`)
				case c.path == "responses":
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n")
				default:
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n")
				}
				w.(http.Flusher).Flush()
				asked <- struct{}{}
				<-r.Context().Done()
			}))
			t.Cleanup(model.Close)
			cfg, err := config.Parse([]byte("model: {base_url: "+model.URL+"/v1, api_key: sk-fake, name: fake}\n"), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			g := newTestGateway(t, cfg)
			srv := serveTest(t, g)
			stopped := make(chan int, 1)
			go func() {
				<-asked
				code, _ := do(t, "POST", srv.URL+"/v1/requests/stopme/cancel", `{"mode":"cancel","reason":"operator"}`, nil)
				stopped <- code
			}()
			req, _ := http.NewRequest("POST", srv.URL+"/v1/"+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(link.HeaderRequest, "stopme")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if code := <-stopped; code != 200 {
				t.Fatalf("the cancel answered %d", code)
			}
			text := string(b)
			if !strings.Contains(text, "stopped (cancel) by api: operator") || !strings.Contains(text, "Do not retry this model call") ||
				strings.Contains(text, "Send the request again") || strings.Contains(text, "model_read") {
				t.Errorf("%d %s\nwant the stop said, and not to retry", resp.StatusCode, text)
			}
			switch c.name {
			case "whole":
				var out map[string]any
				json.Unmarshal(b, &out)
				if resp.StatusCode != http.StatusForbidden || path(out, "error", "type") != "request_stopped" || resp.Header.Get("X-Should-Retry") != "false" {
					t.Errorf("%d %s (x-should-retry %q), want 403 request_stopped, not to be retried", resp.StatusCode, b, resp.Header.Get("X-Should-Retry"))
				}
			case "chat stream":
				if !strings.Contains(text, `"type":"request_stopped"`) {
					t.Errorf("the stream's error chunk: %s, want type request_stopped", text)
				}
			}
			_, d := do(t, "GET", srv.URL+"/v1/requests/stopme/graph", "", nil)
			if f := path(d, "frames", 0); path(f, "kind") != "model" || !strings.Contains(fmt.Sprint(path(f, "error")), "operator") {
				t.Errorf("model frame = %v, want it ended with the stop's cause", f)
			}
		})
	}
}
