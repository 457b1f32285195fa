package schema

import (
	"encoding/json"
	"testing"

	"github.com/agentreach/reach/internal/callgraph"
)

// TestStray: a member that is no property of its object's schema but is
// one to encoding/json (case folded, the Kelvin sign a k) is found at any
// depth the schema names properties at (properties, items, prefixItems,
// allOf/anyOf/oneOf, a local $ref, recursive), whatever
// additionalProperties says; a property, a member no property folds to,
// and the members of a map are not.
func TestStray(t *testing.T) {
	const file = `{"type":"object","properties":{"path":{"type":"string"},"opts":{"type":"object","properties":{"kind":{"type":"string"}}},"list":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"}}}},"tags":{"type":"object","additionalProperties":{"type":"string"}}}}`
	const closed = `{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}`
	const both = `{"type":"object","properties":{"id":{"type":"string"},"ID":{"type":"string"}}}`
	const refs = `{"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"child":{"$ref":"#/$defs/node"}}}},"type":"object","allOf":[{"properties":{"root":{"$ref":"#/$defs/node"}}}],"anyOf":[{"properties":{"mode":{"type":"string"}}}],"properties":{"tuple":{"type":"array","prefixItems":[{"type":"object","properties":{"user":{"type":"string"}}}]}}}`
	for _, tc := range []struct {
		schema, args string
		path, member string // "" for none
	}{
		{file, `{"PATH":"/etc/shadow"}`, "/PATH", "PATH"},
		{file, `{"Path":"/etc/shadow","opts":{}}`, "/Path", "Path"},
		{file, `{"opts":{"\u212aind":"write"}}`, "/opts/\u212aind", "\u212aind"},
		{file, `{"list":[{"id":"1"},{"Id":"2"}]}`, "/list/1/Id", "Id"},
		{file, `{"path":"/tmp/x","opts":{"kind":"r"},"list":[{"id":"1"}]}`, "", ""},
		{file, `{"path":"/tmp/x","Mode":"r","tags":{"PATH":"a","Kind":"b"}}`, "", ""},
		{closed, `{"PATH":"/etc/shadow"}`, "/PATH", "PATH"},
		{both, `{"ID":"1"}`, "", ""},
		{both, `{"Id":"1"}`, "/Id", "Id"},
		{refs, `{"root":{"name":"a","child":{"child":{"NAME":"b"}}}}`, "/root/child/child/NAME", "NAME"},
		{refs, `{"MODE":"x"}`, "/MODE", "MODE"},
		{refs, `{"tuple":[{"USER":"root"}]}`, "/tuple/0/USER", "USER"},
		{refs, `{"root":{"name":"a","child":{"name":"b"}},"mode":"x","tuple":[{"user":"u"},{"USER":"v"}]}`, "", ""},
		{`{"type":"object"}`, `{"PATH":"x"}`, "", ""},
	} {
		s, err := Compile("t", []byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		canon, err := callgraph.Normalize(nil, []byte(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		st := s.Stray(canon)
		if (st != nil) != (tc.member != "") || st != nil && (st.Path != tc.path || st.Member != tc.member) {
			t.Errorf("Stray(%s) = %+v, want %q at %q", tc.args, st, tc.member, tc.path)
		}
		e := Refusal("t", s, canon)
		if tc.member != "" && (e == nil || len(e.Fields) != 1 || e.Fields[0].Path != tc.path) {
			t.Errorf("Refusal(%s) = %+v, want the stray at %s", tc.args, e, tc.path)
		}
	}
	// Arguments whose names are all lower case (callgraph.Names.Fold
	// false) are looked at only for a schema that names a property in
	// upper case.
	upper, _ := Compile("t", []byte(`{"type":"object","properties":{"Path":{"type":"string"}}}`))
	if e := RefusalNames("t", upper, []byte(`{"path":"/etc/shadow"}`), false); e == nil || e.Fields[0].Path != "/path" {
		t.Errorf("lower case path against Path: %+v", e)
	}
	// What makes it a stray: encoding/json reads it as the property.
	var v struct {
		Path string `json:"path"`
	}
	if json.Unmarshal([]byte(`{"PATH":"/etc/shadow"}`), &v) != nil || v.Path != "/etc/shadow" {
		t.Errorf("encoding/json read path as %q", v.Path)
	}
}

// BenchmarkStray is the check's cost on a typical call's arguments, none
// of them a stray: a walk of the arguments and a lookup a member.
//
//	go test -run '^$' -bench Stray ./internal/schema/
func BenchmarkStray(b *testing.B) {
	s, _ := Compile("refund", []byte(`{"type":"object","properties":{"order_id":{"type":"string"},"amount":{"type":"number"},"reason":{"type":"string"},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}}},"required":["order_id","amount"]}`))
	args, _ := callgraph.Normalize(nil, []byte(`{"order_id":"1001","amount":5,"reason":"damaged box","items":[{"sku":"A1","qty":1},{"sku":"B2","qty":2}]}`))
	b.ReportAllocs()
	for b.Loop() {
		if s.Stray(args) != nil {
			b.Fatal("stray")
		}
	}
}

// FuzzStray: on any arguments, Stray ends, and a stray it names is no
// property of the schema's and folds to the one it names.
func FuzzStray(f *testing.F) {
	for _, s := range []string{`{"PATH":"x"}`, `{"opts":{"MODE":1},"list":[{"ID":2}]}`, `{"a\u0041":[[{}]]}`, `[1,{"Path":2}]`} {
		f.Add([]byte(s))
	}
	s, err := Compile("t", []byte(`{"type":"object","properties":{"path":{},"opts":{"properties":{"mode":{}}},"list":{"items":{"$ref":"#/$defs/x"}}},"$defs":{"x":{"properties":{"id":{},"ID":{},"list":{"$ref":"#/properties/list"}}}}}`))
	if err != nil {
		f.Fatal(err)
	}
	props := map[string]bool{"path": true, "opts": true, "mode": true, "list": true, "id": true, "ID": true}
	f.Fuzz(func(t *testing.T, in []byte) {
		canon, err := callgraph.Normalize(nil, in)
		if err != nil {
			return
		}
		st := s.Stray(canon)
		if st == nil {
			return
		}
		fm, fp := callgraph.AppendFolded(nil, []byte(st.Member)), callgraph.AppendFolded(nil, []byte(st.Property))
		if props[st.Member] || !props[st.Property] || string(fm) != string(fp) {
			t.Fatalf("Stray(%s) = %+v", canon, st)
		}
	})
}
