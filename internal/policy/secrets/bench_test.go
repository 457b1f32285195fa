package secrets

import "testing"

// BenchmarkRedactToolResult masks a typical tool result with one secret
// registered and nothing to mask: the cost every result pays.
//
//	go test -run '^$' -bench RedactToolResult ./internal/policy/secrets/
func BenchmarkRedactToolResult(b *testing.B) {
	r := New(nil)
	r.Add("s3cr3t-t0ken-value-42")
	res := []byte(`{"content":[{"type":"text","text":"Order 1001: 2 items, shipped on 2026-11-28 to Ann Smith, tracking ZX1234, refund window 30 days."}],"structuredContent":{"id":"1001","status":"shipped","items":[{"sku":"A1","qty":1},{"sku":"B2","qty":1}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		r.Redact(res)
	}
}
