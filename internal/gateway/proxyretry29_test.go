package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// sdkRetries reports whether the model SDKs retry an error answer: the
// openai SDKs obey x-should-retry first, then retry 408, 409, 429 and 5xx;
// the AI SDK's APICallError is retryable on those statuses whatever the
// headers say.
func sdkRetries(resp *http.Response) (openaiSDK, aiSDK bool) {
	s := resp.StatusCode
	byStatus := s == 408 || s == 409 || s == 429 || s >= 500
	switch resp.Header.Get("X-Should-Retry") {
	case "true":
		openaiSDK = true
	case "false":
	default:
		openaiSDK = byStatus
	}
	return openaiSDK, byStatus
}

// TestModelProxyLinkRefusalNotRetried: a model turn whose request headers
// reach refuses (a parent frame of another request of the caller's) is an
// error the client must mend, and nothing ran: no SDK is to send it again.
// It was answered 409 with no x-should-retry, which the openai SDKs and the
// AI SDK retry (two more times by default), each a turn refused again.
func TestModelProxyLinkRefusalNotRetried(t *testing.T) {
	var asked atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(model.Close)
	cfg, err := config.Parse([]byte("model: {base_url: "+model.URL+"/v1, api_key: sk-fake, name: fake}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, newTestGateway(t, cfg))
	turn := func(h map[string]string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"fake","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp, out
	}
	first, out := turn(map[string]string{link.HeaderRequest: "run-a"})
	frame := first.Header.Get(link.HeaderFrame)
	if first.StatusCode != 200 || frame == "" {
		t.Fatalf("the first turn: %d %v (frame %q)", first.StatusCode, out, frame)
	}
	n := asked.Load()
	resp, out := turn(map[string]string{link.HeaderRequest: "run-b", link.HeaderParent: frame})
	if resp.StatusCode < 400 || path(out, "error", "code") != "parent_mismatch" {
		t.Fatalf("a parent frame of another request: %d %v, want it refused (parent_mismatch)", resp.StatusCode, out)
	}
	if o, a := sdkRetries(resp); o || a {
		t.Errorf("the refusal %d (x-should-retry %q) is retried by the openai SDKs %v, the AI SDK %v; want neither",
			resp.StatusCode, resp.Header.Get("X-Should-Retry"), o, a)
	}
	if path(out, "error", "type") != "invalid_request_error" || !strings.Contains(fmt.Sprint(path(out, "error", "message")), "drop one of the two") {
		t.Errorf("the refusal %v, want an invalid request that says what to send", out)
	}
	if asked.Load() != n {
		t.Errorf("the model was asked %d times for the refused turn", asked.Load()-n)
	}
}
