package template

import (
	"encoding/json"
	"testing"
)

// A template's scope is a call's arguments (the model's) and its result
// (the tool's): neither is trusted. Whatever they hold, a compiled JSON
// template renders valid JSON or an error, and a text template a string or
// an error; nothing panics.
func FuzzRender(f *testing.F) {
	f.Add(`{"refund_id": "{result.refund_id}", "order": "{args.order_id}"}`, `{"order_id":"7","n":3}`, `{"refund_id":"r1"}`)
	f.Add(`{"sku": "{args.items.0.sku}"}`, `{"items":[{"sku":"a"}]}`, ``)
	f.Add(`["{args.a}", "x {result.b.c} y"]`, `{"a":{"b":[1,2]}}`, `not json`)
	f.Add(`{"n": "{n}"}`, `{"n":1e400}`, `{"a":"\ud800"}`)
	f.Add(`order:{id}`, `{"id":"\u0000"}`, `[]`)
	f.Fuzz(func(t *testing.T, tmpl, args, result string) {
		s := NewScope([]byte(args), []byte(result))
		if jt, err := Compile(tmpl); err == nil {
			if out, err := jt.JSON(s); err == nil && !json.Valid(out) {
				t.Fatalf("JSON(%q) over %q, %q = %q: not JSON", tmpl, args, result, out)
			}
			jt.ReadsResult()
		}
		if tt, err := CompileText(tmpl); err == nil {
			tt.Text(s)
		}
	})
}
