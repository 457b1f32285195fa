package a2a

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// FuzzRPC: any body, in any version, gets a JSON-RPC answer (or an event
// stream of them), never a panic.
func FuzzRPC(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"reach/request":"r","reach/parent":"zz"}}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"GetTask","params":{"id":"reach-1"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{"pageSize":1000}}`,
		`{"jsonrpc":"2.0","id":5,"method":"CancelTask","params":{"id":""}}`,
		`{"jsonrpc":"2.0","id":6,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tasks/resubscribe","params":{"id":"x"}}`,
		`[1,2]`, `{`, ``, `{"method":7}`,
	} {
		f.Add(s, "")
		f.Add(s, "1.0")
	}
	rt := reach.New(nil)
	g, err := New(f.Context(), &Options{Agents: []Agent{{Name: "a", URL: "http://127.0.0.1:1"}}, Runtime: rt, Link: testLinker{rt}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { g.Close() })
	f.Fuzz(func(t *testing.T, body, version string) {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/a2a/a", strings.NewReader(body))
		if version != "" {
			r.Header.Set("A2A-Version", version)
		}
		w := httptest.NewRecorder()
		done := make(chan struct{})
		go func() { g.ServeHTTP(w, r); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("body %q version %q: no answer in 5s", body, version)
		}
		out := w.Body.Bytes()
		if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			if !json.Valid(bytes.TrimSpace(out)) {
				t.Fatalf("body %q version %q: answer %q is not JSON", body, version, out)
			}
			return
		}
		n := 0
		for line := range bytes.Lines(out) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				n++
				if !json.Valid(d) {
					t.Fatalf("body %q version %q: event %q is not JSON", body, version, d)
				}
			}
		}
		if n == 0 {
			t.Fatalf("body %q version %q: a stream without events: %q", body, version, out)
		}
	})
}
