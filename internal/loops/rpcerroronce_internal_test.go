package loops

import (
	"encoding/json"
	"testing"
)

// TestRPCErrorAnswerDecodesOnce: a JSON-RPC error answer is decoded once,
// into the members read: reading it costs fewer allocations than decoding
// its top level into a map alone, which it did before and then decoded
// its error member again. What it answers is as before: the complaint is
// the error's message and data, transient when they say so.
func TestRPCErrorAnswerDecodesOnce(t *testing.T) {
	b := []byte(`{"jsonrpc":"2.0","id":41,"error":{"code":-32000,"message":"nonce too low","data":{"next":43}}}`)
	complaint, transient := rpcErrorAnswer(b)
	if string(complaint) != `{"message":"nonce too low","data":{"next":43}}` || transient {
		t.Fatalf("rpcErrorAnswer = %s, %v; want the message and data, not transient", complaint, transient)
	}
	if _, transient := rpcErrorAnswer([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit exceeded","data":"rate limit: try again in 2s"}}`)); !transient {
		t.Error("an error whose data says rate limit: not transient, want transient")
	}
	if c, _ := rpcErrorAnswer([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom","data":null}}`)); string(c) != `{"message":"boom","data":null}` {
		t.Errorf("data null: complaint %s, want it kept as given", c)
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"error":"a text, not an error object"}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":5}}`,
		`{"jsonrpc":"2.0","id":7,"error":null,"result":null}`,
		`{"jsonrpc":"2.0","id":7,"result":null,"error":{"message":"both"}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"message":"cut short"`,
	} {
		if c, _ := rpcErrorAnswer([]byte(s)); c != nil {
			t.Errorf("rpcErrorAnswer(%s) = %s, want no failure", s, c)
		}
	}
	once := testing.AllocsPerRun(100, func() { rpcErrorAnswer(b) })
	mapOnly := testing.AllocsPerRun(100, func() {
		var top map[string]json.RawMessage
		_ = json.Unmarshal(b, &top)
	})
	if once >= mapOnly {
		t.Errorf("rpcErrorAnswer allocates %v times, decoding the answer's top level into a map alone %v: want fewer", once, mapOnly)
	}
}
