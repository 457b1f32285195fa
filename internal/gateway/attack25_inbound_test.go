package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAttack25A2ANullPartRefused: a caller's A2A message with a null part
// is refused at once with invalid params that name the part, on a send
// and a streamed send, and no task is made; it was handed on and failed
// at the agent's client, a FAILED task saying "try again later" with the
// client's internals (a gob error), which it never could. A message with
// its parts whole still goes.
func TestAttack25A2ANullPartRefused(t *testing.T) {
	_, url := a2aGateway(t, echoAgent{}, "")
	post := func(body string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", url+"/a2a/executor", strings.NewReader(body))
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, method := range []string{"SendMessage", "SendStreamingMessage"} {
		out := post(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"message":{"messageId":"m-` + method + `","role":"ROLE_USER","parts":[{"text":"x"},null]}}}`)
		if !strings.Contains(out, `"code":-32602`) || !strings.Contains(out, "Part 1 of the message is null") {
			t.Errorf("%s with a null part answered %s, want invalid params naming part 1", method, out)
		}
	}
	if out := post(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`); strings.Contains(out, `"m-Send`) {
		t.Errorf("a refused message made a task: %s", out)
	}
	if out := post(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"ok","role":"ROLE_USER","parts":[{"text":"x"}]}}}`); !strings.Contains(out, "TASK_STATE_COMPLETED") {
		t.Errorf("a whole message: %s", out)
	}
}
