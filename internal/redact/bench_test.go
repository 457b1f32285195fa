package redact_test

import (
	"encoding/json"
	"fmt"
	"strings"
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
		{"text-with-url", []byte(`GET https://shop.example/search?q=red%20shoes&page=2&sort=price%3Aasc took 120 ms, 50% cached`), r.Redact}, // escapes that spell no value
		{"html-entities", []byte(`<p>Tom &amp; Jerry &#8212; &quot;the chase&quot; &lt;2 min&gt;</p>`), r.Values},
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

// BenchmarkRedactManySecrets masks a large result with 50 registered
// values, half of them tokens of letters and digits, half keys of base64
// ('/' and '+'), each looked for in all its forms, none of them in the
// result: a typical tool result, 1 MB of a log's lines as text, and as a
// tool result's JSON (its line breaks escaped, read string by string).
//
//	go test -run '^$' -bench RedactManySecrets -count 6 ./internal/redact/
func BenchmarkRedactManySecrets(b *testing.B) {
	const b62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	const b64 = b62 + "+/"
	var secrets []string
	x := uint64(1)
	for i := range 50 {
		alpha, s := b62, []byte("ghp_") // a GitHub token
		if i%2 == 1 {
			alpha, s = b64, nil // an AWS secret key
		}
		for len(s) < 40 {
			x = x*6364136223846793005 + 1442695040888963407
			s = append(s, alpha[x>>58%uint64(len(alpha))])
		}
		secrets = append(secrets, string(s))
	}
	r, _ := redact.New(&redact.Options{Secrets: secrets})
	var text []byte
	for i := 0; len(text) < 1<<20; i++ {
		text = fmt.Appendf(text, "2026-11-28T10:%02d:%02dZ INFO order %d shipped to Ann Smith, tracking ZX%d, 2 items, refund window 30 days\n", i/60%60, i%60, 1000+i, 4000+i)
	}
	doc, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": string(text)}}})
	b.Run("tool-result", func(b *testing.B) { // the typical result, every call's
		for b.Loop() {
			r.Redact(toolResult)
		}
	})
	b.Run("stream", func(b *testing.B) { // a model's answer, a few bytes a piece
		pieces := strings.SplitAfter(string(text[:4096]), " ")
		b.SetBytes(4096)
		for b.Loop() {
			st := r.Stream()
			for _, p := range pieces {
				st.Next(p)
			}
			st.Flush()
		}
	})
	b.Run("text", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			r.RedactString(string(text))
		}
	})
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			r.Redact(doc)
		}
	})
}

// BenchmarkRedactBackslashes masks 1 MB of text full of backslashes, with
// two values registered and none in it: Windows paths (\b, \t, \n as
// escapes, the rest unknown ones) and LaTeX (\\ too), as a model's answer
// (Values, Redact) and streamed in pieces of 16 bytes and of 4 KB: a
// Stream reads a text unescaped only when an escape in it may spell a
// part of a value (docs/BENCHMARKS.md).
//
//	go test -run '^$' -bench RedactBackslashes -benchmem -count 6 ./internal/redact/
func BenchmarkRedactBackslashes(b *testing.B) {
	r, _ := redact.New(&redact.Options{Secrets: []string{"s3cr3t-t0ken-value-42", "Passwört-2024-xyz"}})
	var win, tex strings.Builder
	for win.Len() < 1<<20 {
		win.WriteString(`C:\Users\ann\AppData\Local\Temp\build\obj\x64\Release\module.dll` + "\n")
		tex.WriteString(`\begin{align} \frac{\partial u}{\partial t} &= \alpha \nabla^2 u \\ \int_0^\infty e^{-x^2}\,dx \end{align}` + "\n")
	}
	for _, tc := range []struct{ name, text string }{{"windows", win.String()}, {"latex", tex.String()}} {
		doc, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": tc.text}}}})
		b.Run(tc.name+"/values", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				r.Values(doc)
			}
		})
		b.Run(tc.name+"/redact", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				r.Redact(doc)
			}
		})
		for _, n := range []int{16, 4096} {
			b.Run(fmt.Sprintf("%s/stream-%d", tc.name, n), func(b *testing.B) {
				b.SetBytes(int64(len(tc.text)))
				for b.Loop() {
					s := r.Stream()
					for i := 0; i < len(tc.text); i += n {
						s.Next(tc.text[i:min(len(tc.text), i+n)])
					}
					s.Flush()
				}
			})
		}
	}
}
