package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/link"
)

// TestModelProxyFloorAnyAnswerStatus: an answer is charged whatever 2xx
// status the endpoint gives it. The OpenAI SDKs read any 2xx (openai-go
// any status below 400) as a success: an endpoint reporting 0 tokens that
// answered 201 or 203 had its answer passed on as it was and charged
// nothing, so a token budget never stopped it. A 3xx the transport did not
// follow is refused (502 model_bad_status), its body not passed on.
func TestModelProxyFloorAnyAnswerStatus(t *testing.T) {
	const said = 500
	text := strings.Repeat("word ", said)
	answers := map[string]func(w http.ResponseWriter){
		"whole201": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, text)
		},
		"whole203": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNonAuthoritativeInfo)
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, text)
		},
		"stream203": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusNonAuthoritativeInfo)
			chatDeltas(w, text, `{"content":%q}`)
		},
		"whole300": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMultipleChoices)
			fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, text)
		},
	}
	g, url := modelGateway(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		for name, answer := range answers {
			if strings.Contains(string(b), `"case:`+name+`"`) {
				answer(w)
				return
			}
		}
		http.Error(w, "no case", http.StatusBadRequest)
	}, "")
	for name := range answers {
		body := `{"messages":[{"role":"user","content":"case:` + name + `"}]}`
		if strings.HasPrefix(name, "stream") {
			body = `{"stream":true,"messages":[{"role":"user","content":"case:` + name + `"}]}`
		}
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(link.HeaderRequest, "status-"+name)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if name == "whole300" {
			if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(b), "word word") || !strings.Contains(string(b), "model_bad_status") ||
				resp.Header.Get("X-Should-Retry") != "false" {
				t.Errorf("%s: %d (x-should-retry %q) %.200s; want 502 model_bad_status without the body, not to be retried", name, resp.StatusCode, resp.Header.Get("X-Should-Retry"), b)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "word") {
			t.Fatalf("%s: %d %.200s; want 200 with the answer", name, resp.StatusCode, b)
		}
		if got := requestTokens(t, g, "status-"+name); got < said {
			t.Errorf("%s: an answer of %d words, reported as 0 tokens, was charged %d tokens, want at least %d", name, said, got, said)
		}
	}
}
