package schema

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
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

// Numbers float64 cannot hold exactly, in the schema or the arguments.
func TestQuickLeavesInexactNumbersToFull(t *testing.T) {
	leftToFull(t, []struct{ schema, in string }{
		{`{"type":"object","properties":{"x":{"type":"number","minimum":0}}}`, `{"x":-1e-400}`},
		{`{"type":"object","properties":{"x":{"type":"number","maximum":0}}}`, `{"x":1e-400}`},
		{`{"type":"object","properties":{"x":{"type":"number","maximum":1}}}`, `{"x":1.00000000000000001}`},
		{`{"type":"object","properties":{"x":{"type":"number","maximum":1e308}}}`, `{"x":1e309}`},
		{`{"type":"object","properties":{"x":{"type":"integer","minimum":1.00000000000000001}}}`, `{"x":1}`},
		{`{"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":1e-400}}}`, `{"x":0}`},
		{`{"type":"object","properties":{"x":{"type":"integer","maximum":9007199254740992}}}`, `{"x":9007199254740993}`},
		{`{"type":"object","properties":{"s":{"type":"string","minLength":18446744073709551621}}}`, `{"s":"ab"}`},
		{`{"type":"object","properties":{"s":{"type":"string","minLength":4294967299}}}`, `{"s":"ab"}`},
		{`{"type":"object","properties":{"a":{"type":"array","minItems":4294967297}}}`, `{"a":[1]}`},
	})
}

// Declining what float64 cannot hold keeps the common bounds quick.
func TestQuickKeepsExactBounds(t *testing.T) {
	for _, tc := range []struct{ schema, in string }{
		{`{"type":"object","properties":{"x":{"type":"number","minimum":0.1,"maximum":1e3}}}`, `{"x":0.1}`},
		{`{"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":-2.5}}}`, `{"x":-2.4999}`},
		{`{"type":"object","properties":{"x":{"type":"integer","minimum":1,"maximum":100}}}`, `{"x":100}`},
		{`{"type":"object","properties":{"x":{"type":"number","minimum":0}}}`, `{"x":123456789012345}`},
		{`{"type":"object","properties":{"x":{"type":"number","maximum":0}}}`, `{"x":-0}`},
		{`{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":2147483647}}}`, `{"s":"ab"}`},
	} {
		q := CompileQuick([]byte(tc.schema))
		if q == nil {
			t.Errorf("%s not compiled", tc.schema)
			continue
		}
		canon, err := callgraph.Normalize(nil, []byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if !q.Valid(canon) {
			t.Errorf("%s: quick = false for %s, want true", tc.schema, canon)
		}
	}
}

func TestQuickRefusesUnsupported(t *testing.T) {
	for _, s := range []string{`{"oneOf":[{"type":"string"}]}`, `{"$ref":"#/x"}`, `{"properties":{"a":{"allOf":[]}}}`, `{"enum":[1,2]}`, `{"additionalProperties":{"type":"string"}}`} {
		if CompileQuick([]byte(s)) != nil {
			t.Errorf("%s compiled to a quick schema", s)
		}
	}
}

// boundSchemas are property schemas FuzzQuick fills with a fuzzed bound.
var boundSchemas = []string{
	`{"type":"number","minimum":%s}`, `{"type":"number","maximum":%s}`,
	`{"type":"number","exclusiveMinimum":%s}`, `{"type":"number","exclusiveMaximum":%s}`,
	`{"type":"integer","minimum":%s}`, `{"type":"integer","maximum":%s}`,
	`{"type":"integer","exclusiveMinimum":%s}`, `{"type":"integer","exclusiveMaximum":%s}`,
	`{"type":"string","minLength":%s}`, `{"type":"string","maxLength":%s}`,
	`{"type":"array","minItems":%s}`, `{"type":"array","maxItems":%s}`,
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// FuzzQuick: the quick path never calls valid what the full validator
// refuses, for the fixed schemas and for a property x whose bound (one of
// boundSchemas, picked by kind) is fuzzed too.
func FuzzQuick(f *testing.F) {
	for _, s := range []string{`{"order_id":"1","limit":3,"tags":["a"]}`, `{"q":"ab","nested":{"x":false}}`, `{"order_id":"\u0031"}`, `{"limit":1e1,"order_id":"9"}`} {
		f.Add(s, "1", uint8(0))
	}
	f.Add(`{"x":-1e-400}`, "0", uint8(0))
	f.Add(`{"x":1e-400}`, "0", uint8(1))
	f.Add(`{"x":1}`, "1.00000000000000001", uint8(4))
	f.Add(`{"x":0}`, "-1e-400", uint8(2))
	f.Add(`{"x":"ab"}`, "18446744073709551621", uint8(8))
	f.Add(`{"x":[1,2]}`, "18446744073709551617", uint8(11))
	var fulls []*jsonschema.Schema
	var quicks []*Quick
	for _, s := range schemas {
		fulls = append(fulls, full(f, s))
		quicks = append(quicks, CompileQuick([]byte(s)))
	}
	f.Fuzz(func(t *testing.T, in, bound string, kind uint8) {
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
		if !jsonNumber.MatchString(bound) {
			return
		}
		s := `{"type":"object","properties":{"x":` + fmt.Sprintf(boundSchemas[int(kind)%len(boundSchemas)], bound) + `}}`
		q := CompileQuick([]byte(s))
		if q == nil || !q.Valid(canon) {
			return
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
		if err != nil {
			return
		}
		c := jsonschema.NewCompiler()
		if c.AddResource("s.json", doc) != nil {
			return
		}
		sch, err := c.Compile("s.json")
		if err != nil {
			return
		}
		if err := sch.Validate(v); err != nil {
			t.Fatalf("%s: quick accepts %s, full refuses: %v", s, canon, err)
		}
	})
}
