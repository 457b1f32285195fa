package batch

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzSubstitute: whatever the arguments and the data they name, a
// substitution never panics; it is refused, or gives JSON of at most the
// bound (arguments with no $ref come back as they are), and it reads each
// call's outcome at most once.
func FuzzSubstitute(f *testing.F) {
	f.Add([]byte(`{"x":{"$ref":"a.n"}}`), []byte(`{"n":7}`), 64)
	f.Add([]byte(`{"x":[{"$ref":"a"},{"$ref":"a"},{"$ref":"a.l.1"}]}`), []byte(`{"l":[1,2,3]}`), 40)
	f.Add([]byte(`{"x":{"$ref":"b"}}`), []byte(`null`), 100)
	f.Add([]byte(`{"x":{"$ref":"a.."}}`), []byte(`{"":{"":1}}`), 100)
	f.Add([]byte(`[{"$ref":"a.0"}]`), []byte(`[{"$ref":"a"}]`), 10)
	f.Add([]byte(`{"$ref":"a"}`), []byte(`"s"`), 1)
	f.Fuzz(func(t *testing.T, args, data []byte, limit int) {
		limit = max(limit, 0)
		asked := map[string]int{}
		out, e := substitute(args, func(id string) (Result, bool) {
			asked[id]++
			return Result{Data: data, Succeeded: true}, id == "a"
		}, limit)
		for id, n := range asked {
			if n > 1 {
				t.Fatalf("the outcome of %q was read %d times", id, n)
			}
		}
		if e != nil {
			if e.Code == "" || e.Message == "" || e.Suggestion == "" {
				t.Fatalf("a refusal without its code, message or suggestion: %+v", e)
			}
			return
		}
		switch {
		case !bytes.Contains(args, []byte(`"$ref"`)) || !json.Valid(args):
			if !bytes.Equal(out, args) {
				t.Fatalf("arguments with no $ref (or not JSON) changed: %q -> %q", args, out)
			}
		case !json.Valid(out):
			t.Fatalf("substituted arguments are not JSON: %q", out)
		case len(out) > limit:
			t.Fatalf("substituted arguments of %d bytes, past the bound %d", len(out), limit)
		}
	})
}
