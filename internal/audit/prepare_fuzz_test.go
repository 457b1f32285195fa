package audit

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzPrepareDecode: the log's own JSON encoder (appendData, what the chain
// hashes) and the decoder of a stored record agree on anything an event
// may hold: the stored data is valid UTF-8 JSON, it decodes, each text
// reads back as stored (cleaned, capped), the arguments and budget as JSON
// (or, not JSON, as a string), and encoding the decoded event again gives
// the same bytes, so that a record read back and written again hashes the
// same.
func FuzzPrepareDecode(f *testing.F) {
	f.Add("search_kb", "alice", "refused: \"quoted\" \\ </script>", "result \u2028 \x00 \xff", []byte(`{"q": [1, 2.5e3, "x"]}`), []byte(`{"turns":3}`))
	f.Add("", "", "", "", []byte(`not json`), []byte(``))
	f.Add("\xed\xa0\x80", "é", "\u0000", "…", []byte("\"\xff\""), []byte(`[]`))
	f.Add("a", "b", "c", "d", []byte(`{"a":"\u0000","b":"\ud800"}`), []byte(`null`))
	l := &Log{o: Options{MaxResult: 512, MaxMessage: 1024, MaxArgs: 16 << 10}}
	f.Fuzz(func(t *testing.T, name, principal, message, result string, args, budget []byte) {
		rec := l.prepare(&Event{Kind: "tool", Name: name, Principal: principal, Message: message, Result: result, Args: args, Budget: budget})
		if !utf8.Valid(rec.Data) || !json.Valid(rec.Data) {
			t.Fatalf("stored data is not valid UTF-8 JSON: %q", rec.Data)
		}
		e, err := decode(rec)
		if err != nil {
			t.Fatalf("decode: %v (data %q)", err, rec.Data)
		}
		if e.Name != clean(name) || e.Principal != clean(principal) {
			t.Fatalf("name %q principal %q read back as %q %q", name, principal, e.Name, e.Principal)
		}
		if len(e.Message) > 1024+len("…") || len(e.Result) > 512+len("…") {
			t.Fatalf("message (%d bytes) or result (%d) over its cap", len(e.Message), len(e.Result))
		}
		if (len(args) > 0) != (len(e.Args) > 0) || (len(args) > 0 && !json.Valid(e.Args)) {
			t.Fatalf("args %q read back as %q", args, e.Args)
		}
		if (len(budget) > 0) != (len(e.Budget) > 0) || (len(budget) > 0 && !json.Valid(e.Budget)) {
			t.Fatalf("budget %q read back as %q", budget, e.Budget)
		}
		if again := appendData(nil, e); !bytes.Equal(again, rec.Data) {
			t.Fatalf("encoded again:\n%q\nstored:\n%q", again, rec.Data)
		}
	})
}
