package modelproxy

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf16"
)

// tokenRow is a text of testdata/tokens37.json and its tokens as the
// cl100k_base and o200k_base encodings count it (tiktoken's ranks, read
// offline): random text of each class byte-pair encodings split finest
// (digits apart, CJK, rare ideographs, Hangul, emoji, punctuation, random
// letters, base64, control characters, combining marks...), and ordinary
// text (English prose, Markdown, Go, go.sum's hashes, a package.json,
// Chinese and Japanese prose).
type tokenRow struct {
	Name string `json:"name"`
	Text string `json:"text"`
	CL   int64  `json:"cl100k_base"`
	O200 int64  `json:"o200k_base"`
}

func tokenRows(t testing.TB) []tokenRow {
	b, err := os.ReadFile("testdata/tokens37.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []tokenRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// asciiJSON is s as a JSON string whose every character past ASCII is a
// \u escape (Python's json.dumps, ensure_ascii).
func asciiJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r >= 0x7f:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// messageFraming is what a chat turn's one message adds to its text's
// tokens (its role and the template's markers: 3 a message, 3 for the
// answer's start).
const messageFraming = 7

// TestPromptEstimateCoversAdversarialText37: the prompt's estimate is at
// least what the model counts, for every text of the table, with either
// encoding (a budget then never pays for a prompt past its estimate), as
// Go's JSON and as Python's (every character past ASCII escaped). Four
// bytes a token missed digits apart by four times, CJK by three, emoji by
// more than two.
func TestPromptEstimateCoversAdversarialText37(t *testing.T) {
	for _, row := range tokenRows(t) {
		real := max(row.CL, row.O200) + messageFraming
		text, _ := json.Marshal(row.Text)
		for _, enc := range []struct{ name, text string }{{"utf-8", string(text)}, {"ascii", asciiJSON(row.Text)}} {
			body := `{"model":"gpt-4o","messages":[{"role":"user","content":` + enc.text + `}]}`
			est := promptTokens([]byte(body))
			t.Logf("%-22s %-5s bytes %5d  tokens cl100k %5d o200k %5d  estimate %5d (%.2f)  four bytes a token %5d (%.2f)",
				row.Name, enc.name, len(body), row.CL, row.O200, est, float64(est)/float64(real), len(body)/4, float64(len(body)/4)/float64(real))
			if est < real {
				t.Errorf("%s (%s): estimated %d tokens, the model counts %d", row.Name, enc.name, est, real)
			}
		}
	}
}

// BenchmarkPromptEstimate37: the cost of the prompt's estimate, per body
// of the table's texts (English prose, code, CJK, digits apart...): the
// upper-leaning count (promptTokens) beside the body's encoding, which the
// estimate made before too (Marshal), and beside four bytes a token.
func BenchmarkPromptEstimate37(b *testing.B) {
	rows := tokenRows(b)
	var msgs []map[string]string
	for _, r := range rows {
		msgs = append(msgs, map[string]string{"role": "user", "content": r.Text})
	}
	m, _ := json.Marshal(msgs)
	body := map[string]json.RawMessage{"model": json.RawMessage(`"gpt-4o"`), "messages": m}
	out, _ := json.Marshal(body)
	b.Run("marshal", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		for b.Loop() {
			json.Marshal(body)
		}
	})
	b.Run("promptTokens", func(b *testing.B) {
		b.SetBytes(int64(len(out)))
		for b.Loop() {
			promptTokens(out)
		}
	})
}
