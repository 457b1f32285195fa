package a2a

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestIDsTheClientCanMatch: a JSON-RPC id is how a client matches an
// answer to its request. The SDK ran a SendMessage without an id, or with
// a null one, and answered under null, and answered 1234567890123456789
// as 1234567890123456800: each time the hand-off was made and its client
// could not tell which answer was its own. Each is refused before it runs,
// under the id as sent, saying what to send; ids that come back as sent
// still work.
func TestIDsTheClientCanMatch(t *testing.T) {
	h := newHarness(t, nil, "executor")
	post := func(id string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0",` + id + `"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"echo x"}]}}}`
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, h.srv.URL+"/a2a/executor", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, id := range []string{``, `"id":null,`, `"id":1234567890123456789,`, `"id":-9007199254740993,`} {
		out := post(id)
		want := `"id":null`
		if id != "" && id != `"id":null,` {
			want = strings.TrimSuffix(id, ",")
		}
		if !strings.Contains(out, want+",") || !strings.Contains(out, `"code":-32600`) || !strings.Contains(out, "string id") {
			t.Errorf("SendMessage with {%s} answered %.300s, want -32600 under %s saying what id to send", id, out, want)
		}
	}
	if n := len(h.agents["executor"].seen()); n != 0 {
		t.Errorf("the agent got %d messages", n)
	}
	for _, id := range []string{`"id":7,`, `"id":"s",`, `"id":9007199254740992,`, `"id":1.5,`} {
		if out := post(id); !strings.Contains(out, `"id":`+strings.TrimSuffix(id[5:], ",")+`,"result"`) {
			t.Errorf("SendMessage with {%s} answered %.300s, want a result under the id as sent", id, out)
		}
	}
}

// TestBatchRefusedAsOne: a batch (a JSON array) was answered as invalid
// params of one request, which says nothing of what to do; it is refused
// as a batch, saying to send each request on its own, and none runs.
func TestBatchRefusedAsOne(t *testing.T) {
	h := newHarness(t, nil, "executor")
	m := `{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"echo x"}]}}}`
	out, _ := rpc(t, h, "/a2a/executor", map[string]string{"A2A-Version": "1.0"}, " ["+fmt.Sprintf(m, 1)+","+fmt.Sprintf(m, 2)+"]")
	if rpcCode(out) != -32600 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "on its own") {
		t.Errorf("a batch answered %v, want -32600 saying to send each request on its own", out)
	}
	if n := len(h.agents["executor"].seen()); n != 0 {
		t.Errorf("the agent got %d messages", n)
	}
}
