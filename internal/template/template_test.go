package template

import (
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	s := NewScope([]byte(`{"order_id":"7","n":3,"items":[{"sku":"a"}]}`), []byte(`{"refund_id":"r1","amount":12.5}`))
	tests := []struct {
		tmpl, want string
	}{
		{`{"refund_id": "{result.refund_id}", "order": "{args.order_id}"}`, `{"order":"7","refund_id":"r1"}`},
		{`{"n": "{n}"}`, `{"n":3}`},                                                // a whole placeholder keeps the value's type
		{`{"amount": "{result.amount}"}`, `{"amount":12.5}`},                       // a number stays a number
		{`{"note": "order {order_id}, {n} items"}`, `{"note":"order 7, 3 items"}`}, // inside text: as text
		{`{"sku": "{args.items.0.sku}"}`, `{"sku":"a"}`},                           // list indices
		{`["{args.order_id}", {"k": "{result.refund_id}"}]`, `["7",{"k":"r1"}]`},
	}
	for _, tt := range tests {
		c, err := Compile(tt.tmpl)
		if err != nil {
			t.Fatalf("Compile(%s): %v", tt.tmpl, err)
		}
		got, err := c.JSON(s)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s = %s, %v; want %s", tt.tmpl, got, err, tt.want)
		}
	}
}

func TestText(t *testing.T) {
	c, err := CompileText("order:{order_id}")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Text(NewScope([]byte(`{"order_id":42}`), nil)); err != nil || got != "order:42" {
		t.Errorf("Text = %q, %v; want order:42", got, err)
	}
	if _, err := c.Text(NewScope([]byte(`{}`), nil)); err == nil || !strings.Contains(err.Error(), `no field "order_id"`) {
		t.Errorf("Text without the argument: err = %v, want no field", err)
	}
}

func TestCompileErrors(t *testing.T) {
	for tmpl, want := range map[string]string{
		`{"a": `:                 "is not JSON",
		`{"a": "{other.field}"}`: "must start with args. or result",
	} {
		if _, err := Compile(tmpl); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%s): err = %v, want %q", tmpl, err, want)
		}
	}
}

func TestReadsResult(t *testing.T) {
	for tmpl, want := range map[string]string{
		`{"q": "{args.query}"}`:           "",
		`{"q": "{query}"}`:                "",
		`{"q": "{result.id}"}`:            "{result.id}",
		`{"q": "x {result} y"}`:           "{result}",
		`{"q": "{resulting}"}`:            "",
		`{"a": "{a}", "b": "{result.x}"}`: "{result.x}",
	} {
		c, err := Compile(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := c.ReadsResult(); got != want {
			t.Errorf("ReadsResult(%s) = %q, want %q", tmpl, got, want)
		}
	}
}
