package schema

import (
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/fault"
)

func TestRefusal(t *testing.T) {
	s, err := Compile("get", []byte(`{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if e := Refusal("get", s, []byte(`{"id":1}`)); e != nil {
		t.Errorf("valid arguments refused: %+v", e)
	}
	if e := Refusal("get", nil, []byte(`{"anything":true}`)); e != nil {
		t.Errorf("a tool without a schema refused an object: %+v", e)
	}
	for _, args := range []string{``, `[1]`, `"x"`} {
		e := Refusal("get", nil, []byte(args))
		if e == nil || e.Type != fault.TypeInvalidArgs || e.Message != "The arguments of get must be a JSON object." {
			t.Errorf("Refusal(%q) = %+v; want the refusal of arguments that are not an object", args, e)
		}
	}
	e := Refusal("get", s, []byte(`{"id":"one"}`))
	if e == nil || e.Guard != "validate" || e.Code != "invalid_arguments" || !strings.Contains(e.Message, "do not match its schema") ||
		len(e.Fields) != 1 || e.Fields[0].Path != "/id" || e.Fields[0].Problem == "" {
		t.Fatalf("Refusal of a wrong type = %+v (fields %+v); want one field error at /id", e, e.Fields)
	}
	// The message is shown alone (audit view, UI): a whole sentence, not
	// one that ends in a colon waiting for the fields.
	if !strings.HasSuffix(e.Message, ".") {
		t.Errorf("message %q does not end a sentence", e.Message)
	}
	if text := e.ModelText(); !strings.HasPrefix(text, e.Message+"\n- /id: ") {
		t.Errorf("ModelText = %q; want the message, then the field", text)
	}
}
