package modelproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// okCompletion is a chat completion saying "ok", with its usage.
const okCompletion = `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`

// countingModel is a model upstream answering every turn with answer (a
// chat completion's JSON); asked counts the turns it was sent.
func countingModel(t *testing.T, answer string) (up *httptest.Server, asked *atomic.Int64) {
	asked = new(atomic.Int64)
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(up.Close)
	return up, asked
}

// requestNamed is rt's request id; the test fails without one.
func requestNamed(t *testing.T, rt *reach.Runtime, id string) *reach.Request {
	t.Helper()
	for _, q := range rt.Requests() {
		if q.ID() == id {
			return q
		}
	}
	t.Fatalf("no request %s", id)
	return nil
}
