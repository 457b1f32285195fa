package effects

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/template"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Writes: []string{"order:{other.x}"}}, "tool t: entity template"},
		{Spec{Undo: &Call{}}, "tool t: undo needs a tool"},
		{Spec{Undo: &Call{Tool: "u", Args: "{"}}, "tool t: undo: template"},
		{Spec{Refresh: &Call{Tool: "get"}}, "tool t: refresh needs the entities the tool writes"},
		{Spec{Verify: &Call{Tool: "check"}, Condition: "result."}, "tool t: verify condition"},
		{Spec{Verify: &Call{Tool: "check"}, Condition: `"yes"`}, "must be true or false, not string"},
	}
	for _, tt := range tests {
		if _, err := Compile("t", tt.spec); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%+v): err = %v, want %q", tt.spec, err, tt.want)
		}
	}
	if c, err := Compile("t", Spec{}); c != nil || err != nil {
		t.Errorf("Compile of no contract = %v, %v; want nil", c, err)
	}
}

func TestNamesAndFollowups(t *testing.T) {
	c, err := Compile("refund", Spec{
		Reads:  []string{"order:{order_id}"},
		Writes: []string{"order:{order_id}", "refund:{args.order_id}", "order:{order_id}"},
		Undo:   &Call{Tool: "cancel_refund", Args: `{"id": "{result.refund_id}"}`},
		Verify: &Call{Tool: "get_refund"}, Condition: "result.state == 'done'",
	})
	if err != nil {
		t.Fatal(err)
	}
	s := template.NewScope([]byte(`{"order_id":"7"}`), []byte(`{"refund_id":"r1"}`))
	if got, err := Names(c.Writes, s); err != nil || !slices.Equal(got, []string{"order:7", "refund:7"}) {
		t.Errorf("Names(writes) = %v, %v; want [order:7 refund:7], sorted, each once", got, err)
	}
	if args, err := c.Undo.Args.JSON(s); err != nil || string(args) != `{"id":"r1"}` {
		t.Errorf("the undo's arguments = %s, %v", args, err)
	}
	if args, err := c.Verify.Args.JSON(s); err != nil || string(args) != `{}` {
		t.Errorf("the verify check's arguments (none given) = %s, %v; want {}", args, err)
	}
	if _, err := Names(c.Reads, template.NewScope([]byte(`{}`), nil)); err == nil || !strings.Contains(err.Error(), "entity order:{order_id}") {
		t.Errorf("Names without the argument: err = %v", err)
	}
}

func TestConfirms(t *testing.T) {
	c, err := Compile("pay", Spec{Verify: &Call{Tool: "get_payment"},
		Condition: "result.amount == args.amount && result.id == output.id"})
	if err != nil {
		t.Fatal(err)
	}
	args, output := []byte(`{"amount":5}`), []byte(`{"id":"p1"}`)
	for result, want := range map[string]string{
		`{"amount":5,"id":"p1"}`: "",
		`{"amount":4,"id":"p1"}`: "it evaluated to false",
		`{"id":"p1"}`:            "no such key: amount",
	} {
		if got := c.Confirms([]byte(result), args, output); got != want {
			t.Errorf("Confirms(%s) = %q, want %q", result, got, want)
		}
	}
}
