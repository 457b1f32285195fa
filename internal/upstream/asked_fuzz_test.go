package upstream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzAskedRequests: whatever an upstream sends as a sampling or an
// elicitation request's params, what reach reads of it (the model frame's
// name, the request passed on to the client) is read without a panic and
// holds no configured secret. A null model hint crashed the gateway.
func FuzzAskedRequests(f *testing.F) {
	const secret = "sk-fz-0123456789abcdef"
	f.Add(`{"maxTokens":10,"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"modelPreferences":{"hints":[null]}}`)
	f.Add(`{"maxTokens":1,"messages":[null],"metadata":{"k":"sk-fz-0123456789abcdef"},"stopSequences":["sk-fz-0123456789abcdef"]}`)
	f.Add(`{"modelPreferences":{"hints":[{"name":"sk-fz-0123456789abcdef"}]},"systemPrompt":"sk-fz-0123456789abcdef"}`)
	f.Add(`{"message":"fill in","requestedSchema":{"type":"object","properties":{"password":{"type":"string","default":"sk-fz-0123456789abcdef"}}}}`)
	f.Add(`{"metadata":{"sk-fz-0123456789abcdef":1},"requestedSchema":{"properties":{"sk-fz-0123456789abcdef":{}}}}`)
	f.Add(`{"mode":"url","message":"m","url":"https://h/?k=sk-fz-0123456789abcdef","elicitationId":"e"}`)
	// An image whose bytes hold the secret (API_KEY=sk-fz-...): masked in
	// its base64, the request no longer decoded, and went on unmasked.
	f.Add(`{"maxTokens":1,"messages":[{"role":"user","content":{"type":"image","mimeType":"image/png","data":"QVBJX0tFWT1zay1mei0wMTIzNDU2Nzg5YWJjZGVmCg=="}}],"metadata":{"k":"sk-fz-0123456789abcdef"}}`)
	red, err := redact.New(&redact.Options{Secrets: []string{secret}})
	if err != nil {
		f.Fatal(err)
	}
	pl := &Pool{redactor: red}
	f.Fuzz(func(t *testing.T, params string) {
		var sp mcp.CreateMessageParams
		if json.Unmarshal([]byte(params), &sp) == nil { // as answerWire reads it
			p := sp
			if pl.maskSampling(&p) { // else not relayed
				if m := samplingModel(&p); strings.Contains(m, secret) {
					t.Fatalf("the model frame is named %q", m)
				}
				if b, err := json.Marshal(&p); err == nil && strings.Contains(string(b), secret) {
					t.Fatalf("the sampling request passed on holds the secret: %s", b)
				}
			}
		}
		var ep mcp.ElicitParams
		if json.Unmarshal([]byte(params), &ep) == nil {
			if p := pl.maskElicit(&ep); p != nil { // else not relayed
				if b, err := json.Marshal(p); err == nil && strings.Contains(string(b), secret) {
					t.Fatalf("the elicitation passed on holds the secret: %s", b)
				}
			}
		}
	})
}
