package schema

import (
	"bytes"
	"testing"

	"github.com/agentreach/reach/internal/callgraph"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var schemas = []string{
	`{"type":"object","required":["order_id"],"additionalProperties":false,"properties":{"order_id":{"type":"string","pattern":"^[0-9]+$"},"limit":{"type":"integer","minimum":1,"maximum":50},"tags":{"type":"array","items":{"type":"string","maxLength":5},"maxItems":3},"mode":{"enum":["a","b",null]},"ratio":{"type":"number","exclusiveMaximum":1}}}`,
	`{"type":"object","properties":{"q":{"type":["string","null"],"minLength":2},"nested":{"type":"object","required":["x"],"properties":{"x":{"type":"boolean"}}}}}`,
	`{"type":"object"}`,
}

func full(t testing.TB, s string) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AddResource("s.json", doc)
	sch, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func TestQuickAgreesWithFull(t *testing.T) {
	cases := []struct {
		schema int
		in     string
		valid  bool
	}{
		{0, `{"order_id":"123"}`, true},
		{0, `{"order_id":"12a"}`, false},
		{0, `{}`, false},
		{0, `{"order_id":"1","extra":1}`, false},
		{0, `{"order_id":"1","limit":50}`, true},
		{0, `{"order_id":"1","limit":51}`, false},
		{0, `{"order_id":"1","limit":2.5}`, false},
		{0, `{"order_id":"1","tags":["a","b"]}`, true},
		{0, `{"order_id":"1","tags":["a","b","c","d"]}`, false},
		{0, `{"order_id":"1","tags":["toolong"]}`, false},
		{0, `{"order_id":"1","mode":null}`, true},
		{0, `{"order_id":"1","mode":"c"}`, false},
		{0, `{"order_id":"1","ratio":1}`, false},
		{1, `{"q":null,"nested":{"x":true}}`, true},
		{1, `{"q":"a"}`, false},
		{1, `{"nested":{"y":1}}`, false},
		{2, `{"anything":[1,{"a":"b"}]}`, true},
	}
	for _, tc := range cases {
		q := CompileQuick([]byte(schemas[tc.schema]))
		if q == nil {
			t.Fatalf("schema %d not compiled", tc.schema)
		}
		canon, err := callgraph.Normalize(nil, []byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(canon))
		fullValid := full(t, schemas[tc.schema]).Validate(v) == nil
		if fullValid != tc.valid {
			t.Fatalf("test case wrong: full validator says %v for %s", fullValid, tc.in)
		}
		if got := q.Valid(canon); got != tc.valid {
			t.Errorf("schema %d, %s: quick = %v, want %v", tc.schema, tc.in, got, tc.valid)
		}
	}
}

// leftToFull checks, for each row, that the full validator refuses the input
// and the quick path does not call it valid.
func leftToFull(t *testing.T, rows []struct{ schema, in string }) {
	t.Helper()
	for _, tc := range rows {
		canon, err := callgraph.Normalize(nil, []byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(canon))
		if err != nil {
			t.Fatal(err)
		}
		if full(t, tc.schema).Validate(v) == nil {
			t.Fatalf("test case wrong: full validator accepts %s for %s", tc.in, tc.schema)
		}
		if q := CompileQuick([]byte(tc.schema)); q != nil && q.Valid(canon) {
			t.Errorf("%s: quick accepts %s, which the full validator refuses", tc.schema, canon)
		}
	}
}

// A format is asserted by the full validator under draft-04, -06 and -07.
func TestQuickLeavesFormatToFull(t *testing.T) {
	leftToFull(t, []struct{ schema, in string }{
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"email":{"type":"string","format":"email"}},"required":["email"]}`, `{"email":"not an email"}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"u":{"type":"string","format":"uri"}}}`, `{"u":"::nope"}`},
		{`{"$schema":"http://json-schema.org/draft-06/schema#","type":"object","properties":{"d":{"type":"string","format":"date-time"}}}`, `{"d":"yesterday"}`},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"id":{"type":"string","format":"ipv4"}}}`, `{"id":"300.1.1.1"}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"l":{"type":"array","items":{"type":"string","format":"uuid"}}}}`, `{"l":["nope"]}`},
	})
}

func TestQuickRefusesUnsupported(t *testing.T) {
	for _, s := range []string{`{"oneOf":[{"type":"string"}]}`, `{"$ref":"#/x"}`, `{"properties":{"a":{"allOf":[]}}}`, `{"enum":[1,2]}`, `{"additionalProperties":{"type":"string"}}`} {
		if CompileQuick([]byte(s)) != nil {
			t.Errorf("%s compiled to a quick schema", s)
		}
	}
}

// FuzzQuick: the quick path never calls valid what the full validator refuses.
func FuzzQuick(f *testing.F) {
	for _, s := range []string{`{"order_id":"1","limit":3,"tags":["a"]}`, `{"q":"ab","nested":{"x":false}}`, `{"order_id":"\u0031"}`, `{"limit":1e1,"order_id":"9"}`} {
		f.Add(s)
	}
	var fulls []*jsonschema.Schema
	var quicks []*Quick
	for _, s := range schemas {
		fulls = append(fulls, full(f, s))
		quicks = append(quicks, CompileQuick([]byte(s)))
	}
	f.Fuzz(func(t *testing.T, in string) {
		canon, err := callgraph.Normalize(nil, []byte(in))
		if err != nil {
			return
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(canon))
		if err != nil {
			return
		}
		for i, q := range quicks {
			if q.Valid(canon) && fulls[i].Validate(v) != nil {
				t.Fatalf("schema %d: quick accepts %s, full refuses: %v", i, canon, fulls[i].Validate(v))
			}
		}
	})
}
