package redact_test

import (
	"testing"

	"github.com/agentreach/reach/internal/redact"
)

// toolResult is a typical tool result: nothing in it to mask.
var toolResult = []byte(`{"content":[{"type":"text","text":"Order 1001: 2 items, shipped on 2026-11-28 to Ann Smith, tracking ZX1234, refund window 30 days."}],"structuredContent":{"id":"1001","status":"shipped","items":[{"sku":"A1","qty":1},{"sku":"B2","qty":1}]}}`)

// BenchmarkRedactToolResult masks a typical tool result with one secret
// registered and nothing to mask: the cost every result pays. (The same
// benchmark as internal/policy/secrets had, to compare with.)
//
//	go test -run '^$' -bench RedactToolResult ./internal/redact/
func BenchmarkRedactToolResult(b *testing.B) {
	r, _ := redact.New(&redact.Options{Secrets: []string{"s3cr3t-t0ken-value-42"}})
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(toolResult)
	}
}

// BenchmarkRedact measures the shapes the call path masks: a result with a
// secret-named member, a write's arguments (its checkpoints), text with a
// pair, a model's answer (values only).
func BenchmarkRedact(b *testing.B) {
	r, _ := redact.New(&redact.Options{Secrets: []string{"s3cr3t-t0ken-value-42"}})
	for _, tc := range []struct {
		name string
		in   []byte
		f    func([]byte) []byte
	}{
		{"clean-json", toolResult, r.Redact},
		{"write-args", []byte(`{"amount":5,"order_id":"1001","reason":"damaged box"}`), r.Redact}, // a write's checkpoints
		{"json-with-secret-name", []byte(`{"user":"bob","access_token":"abc123","items":[{"sku":"A1","qty":1}],"note":"shipped"}`), r.Redact},
		{"text-with-pair", []byte(`login failed for bob: password=hunter2, retry in 30s`), r.Redact},
		{"model-answer-values", []byte(`{"choices":[{"message":{"role":"assistant","content":"The order shipped on 2026-11-28."}}],"usage":{"prompt_tokens":12,"completion_tokens":9}}`), r.Values},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tc.f(tc.in)
			}
		})
	}
}
