package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/mcpwire"
)

// TestNumberIDsComeBackAsSent: a JSON-RPC id is how a client matches an
// answer to its request. The SDK reads a number id as a float64 and
// answers with it as an int64, so a call with id 1.5 or
// 1234567890123456789 ran and its answer came back under 1 or
// 1234567890123456768, which the client never matched (and a write it
// retries runs twice). Each such id is refused before anything runs, under
// the id as sent, saying what to send; ids that come back as sent still
// work, on whichever path answers them.
func TestNumberIDsComeBackAsSent(t *testing.T) {
	g := newTestGateway(t, nil)
	c := newRawMCP(t, serveTest(t, g).URL+"/mcp", `{}`)
	post := func(id, method, params string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`
		req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcpwire.HeaderSession, c.sid)
		req.Header.Set(mcpwire.HeaderProtocol, "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	calls := func() int {
		st, out := do(t, "GET", c.url[:len(c.url)-len("/mcp")]+"/v1/requests", "", nil)
		if st != 200 {
			t.Fatalf("/v1/requests = %d %v", st, out)
		}
		n := 0
		for _, r := range path(out, "requests").([]any) {
			n += int(r.(map[string]any)["tool_calls"].(float64))
		}
		return n
	}
	for i, id := range []string{"1.5", "1234567890123456789", "-1234567890123456789", "123456789012345678901234567890", "1e400", "9007199254740993", "-9007199254740993", "2.5"} {
		for _, m := range []struct{ method, params string }{
			{"tools/call", fmt.Sprintf(`{"name":"get_order","arguments":{"order_id":"%d"}}`, 1001+i)},
			{"tools/list", `{}`},
			{"ping", `{}`},
		} {
			before := calls()
			out := post(id, m.method, m.params)
			if !strings.Contains(out, `"id":`+id+`,`) || !strings.Contains(out, `"code":-32600`) || !strings.Contains(out, "integer id") {
				t.Errorf("%s with id %s answered %.300s, want -32600 under the id as sent, saying what id to send", m.method, id, out)
			}
			if n := calls(); n != before {
				t.Errorf("%s with id %s ran %d tool calls", m.method, id, n-before)
			}
		}
	}
	for _, id := range []string{"7", "-7", "0", "9007199254740992", "-9007199254740992", "2.0", "1e2", "2.5e1", `"1.5"`} {
		out := post(id, "tools/call", `{"name":"get_order","arguments":{"order_id":"1001"}}`)
		if strings.Contains(out, `"error"`) || !strings.Contains(out, `"result"`) {
			t.Errorf("tools/call with id %s answered %.300s, want a result", id, out)
		}
	}
}
