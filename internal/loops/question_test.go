package loops

import (
	"fmt"
	"strings"
	"testing"
)

// TestQuestionKeptWithCall checks that the question a call asks, kept
// with the call at its first Check, is what question says when the call
// is made again: free text, search keys, spans, date-times, paths, code,
// scripts without spaces, arguments too many to read, reads and writes.
func TestQuestionKeptWithCall(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{`)
	for i := range 40 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `"k%02d":%d`, i, i)
	}
	many.WriteString(`}`)
	args := []string{
		`{"fields":["status","amount"],"order_id":"2025011400123"}`,
		`{"query":"how do I change the billing address"}`,
		`{"limit":5,"q":"refund policy since 2026-12-01T10:00:00Z"}`,
		`{"path":"./src/main.go/"}`,
		`{"window":"45m"}`,
		`{"since":"2026-12-09T13:00:00+01:00","until":"PT45M"}`,
		`{"text":"日本語のテキストを要約して"}`,
		`{"where":"status='open' AND id>3"}`,
		`{"range":"'Q4'!A1:D20"}`,
		`{"row":1,"seat":3}`,
		`{}`,
		many.String(),
	}
	for _, a := range args {
		for _, access := range []string{"read", "write"} {
			d := New(nil)
			s := &Step{Tool: "t", Args: []byte(a), Access: access}
			for round := range 3 {
				if v := d.Check(s); v != nil {
					t.Fatalf("%s %s: refused: %s", access, a, v.Message)
				}
				fresh := &Step{Tool: s.Tool, Args: s.Args, Access: s.Access}
				q := d.question(fresh)
				if s.question != q || s.prose != fresh.prose || s.search != fresh.search || q != 0 && s.asking != fresh.asking {
					t.Errorf("%s %s, call %d: question %x asking %x prose %v search %v; asked afresh %x %x %v %v",
						access, a, round+1, s.question, s.asking, s.prose, s.search, q, fresh.asking, fresh.prose, fresh.search)
				}
				d.Done(s, Outcome{Result: fmt.Appendf(nil, `{"n":%d}`, round)})
			}
		}
	}
}
