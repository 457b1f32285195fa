package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/approval"
)

// A model client's call that reach's model proxy does not serve is
// answered 404 (which SDKs do not retry) with a message that says what to
// change: the SDKs show the error's message alone, and "There is nothing at
// POST /v1/embeddings." told the user nothing. The requests are the bytes
// the clients sent: openai 7.60.0's embeddings.create through a client
// whose base URL is reach's /v1 (an app that sets OPENAI_BASE_URL), the
// same SDK's chat.completions.create on a base URL without /v1,
// @anthropic-ai/sdk 1.17.0's messages.create on reach's address; and
// Gemini's and Ollama's routes, which their clients send the same way. A
// typo of reach's own API, an MCP client's POST to another server's
// message path and a path of no API keep the plain answer.
func TestModelAPICallsSayWhatToChange(t *testing.T) {
	opts := &Options{Runtime: reach.New(nil), Tools: noTools{}, Approvals: approval.New(nil), MCP: http.NotFoundHandler(),
		Model: http.NotFoundHandler(), A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), MaxBody: 1 << 20}
	a := newAPI(opts)
	for _, c := range []struct {
		name, method, path, body string
		headers                  map[string]string
		want                     []string // in the message; none: the plain not_found
	}{
		{"openai embeddings", "POST", "/v1/embeddings", `{"model":"text-embedding-3-small","input":"refund policy","encoding_format":"base64"}`,
			map[string]string{"X-Stainless-Lang": "js", "X-Stainless-Package-Version": "7.60.0"},
			[]string{"does not forward POST /v1/embeddings", "POST /v1/chat/completions", "Send this call to the model endpoint itself"}},
		{"openai legacy completions", "POST", "/v1/completions", `{"model":"m1","prompt":"x"}`, nil,
			[]string{"does not forward POST /v1/completions"}},
		{"openai audio", "POST", "/v1/audio/transcriptions", ``, nil, []string{"does not forward POST /v1/audio/transcriptions"}},
		{"base URL without /v1", "POST", "/chat/completions", `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`, nil,
			[]string{"base URL is http://127.0.0.1:7400.", "Set the client's base URL to http://127.0.0.1:7400/v1", "POST /v1/chat/completions is"}},
		{"base URL with /v1 twice", "POST", "/v1/v1/responses", `{"model":"m1","input":"hi"}`, nil,
			[]string{"base URL is http://127.0.0.1:7400/v1/v1.", "Set the client's base URL to http://127.0.0.1:7400/v1"}},
		{"models under another base", "GET", "/openai/v1/models", ``, nil, []string{"base URL is http://127.0.0.1:7400/openai/v1."}},
		{"a stored answer", "GET", "/v1/responses/resp_123", ``, nil, []string{"does not serve GET /v1/responses/resp_123", "previous_response_id"}},
		{"anthropic messages", "POST", "/v1/messages", `{"model":"m1","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			map[string]string{"Anthropic-Version": "2023-06-01", "X-Api-Key": "x", "X-Stainless-Package-Version": "1.17.0"},
			[]string{"Anthropic's Messages API; reach's model proxy serves OpenAI's API only", "OpenAI-compatible client", "base URL http://127.0.0.1:7400/v1"}},
		{"anthropic token count", "POST", "/v1/messages/count_tokens", `{}`, nil, []string{"Anthropic's Messages API"}},
		{"gemini", "POST", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[]}`, nil, []string{"Gemini's API (generateContent)"}},
		{"ollama", "POST", "/api/chat", `{"model":"m1","messages":[]}`, nil, []string{"Ollama's API"}},
		{"ollama tags", "GET", "/api/tags", ``, nil, []string{"Ollama's API"}},
		{"reach API typo", "GET", "/v1/request", ``, nil, nil},
		{"an MCP client's message path", "POST", "/messages/", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil, nil},
		{"no API", "GET", "/v2/things", ``, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "http://127.0.0.1:7400"+c.path, strings.NewReader(c.body))
			r.RemoteAddr = "127.0.0.1:50000"
			r.Header.Set("Content-Type", "application/json")
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			a.handler.ServeHTTP(w, r)
			var out struct {
				Error struct{ Code, Type, Message, Suggestion string }
			}
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
				t.Fatalf("%d %s: %v", w.Code, w.Body, err)
			}
			if w.Code != http.StatusNotFound || out.Error.Code != "not_found" {
				t.Fatalf("got %d %s, want 404 not_found", w.Code, w.Body)
			}
			if c.want == nil {
				if !strings.HasPrefix(out.Error.Message, "There is nothing at "+c.method+" "+c.path+".") || out.Error.Type != "" {
					t.Errorf("message %q (type %q), want the plain answer", out.Error.Message, out.Error.Type)
				}
				return
			}
			if out.Error.Type != "invalid_request_error" || out.Error.Suggestion == "" || !strings.HasSuffix(out.Error.Message, out.Error.Suggestion) {
				t.Errorf("error %+v: want type invalid_request_error and the suggestion in the message, which SDKs show alone", out.Error)
			}
			for _, s := range c.want {
				if !strings.Contains(out.Error.Message, s) {
					t.Errorf("message %q lacks %q", out.Error.Message, s)
				}
			}
		})
	}
}

func FuzzModelAPICall(f *testing.F) {
	for _, p := range []string{"/v1/embeddings", "/chat/completions", "/v1/v1/responses", "/v1/messages", "/v1beta/models/x:generateContent",
		"/api/chat", "/", "//", "/v1/responses/x/input_items", "/models/:", "/a:b"} {
		f.Add("POST", p)
		f.Add("GET", p)
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		r := &http.Request{Method: method, Host: "reach.test", URL: &url.URL{Path: path}}
		msg, hint, ok := modelAPICall(r)
		if ok && (msg == "" || hint == "" || !strings.HasSuffix(msg, hint)) {
			t.Fatalf("%s %q: message %q, suggestion %q", method, path, msg, hint)
		}
	})
}
