package schema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheck(t *testing.T) {
	s, err := Compile("refund", []byte(`{"type":"object","required":["order_id","amount"],"additionalProperties":false,
		"properties":{"order_id":{"type":"string"},"amount":{"type":"number","minimum":0},"reason":{"enum":["late","broken"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.quick == nil {
		t.Fatal("the schema is within the quick subset, but has no quick path")
	}
	if got, err := s.Check([]byte(`{"amount":5,"order_id":"7"}`)); got != nil || err != nil {
		t.Errorf("valid arguments: %v, %v", got, err)
	}
	got, err := s.Check([]byte(`{"amount":-1,"extra":1,"reason":"bored"}`))
	if err != nil {
		t.Fatal(err)
	}
	fixes := map[string][]string{}
	for _, p := range got {
		if p.Problem == "" {
			t.Errorf("problem at %q says nothing", p.Path)
		}
		fixes[p.Path] = append(fixes[p.Path], p.Fix)
	}
	if diff := cmp.Diff([]string{"use a number within the range"}, fixes["/amount"]); diff != "" {
		t.Errorf("/amount (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"use one of the allowed values"}, fixes["/reason"]); diff != "" {
		t.Errorf("/reason (-want +got):\n%s", diff)
	}
	top := strings.Join(fixes[""], "; ")
	if !strings.Contains(top, "add the missing field") || !strings.Contains(top, "remove the unknown field") {
		t.Errorf("problems of the whole object: fixes %q, want the missing and the unknown field", top)
	}
}

func TestCompileError(t *testing.T) {
	for raw, want := range map[string]string{
		`{"type":`:           "input schema is not JSON",
		`{"type":"nothing"}`: "input schema",
	} {
		if _, err := Compile("t", []byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%s): err = %v, want %q", raw, err, want)
		}
	}
}
