package callgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{``, `null`},
		{` 1 `, `1`},
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"{ \"q\" :\t\"refund policy\" ,\n \"k\": [ 1 , 2 ] }", `{"k":[1,2],"q":"refund policy"}`},
		{`{"z":{"y":1,"x":{"b":null,"a":true}},"a":[]}`, `{"a":[],"z":{"x":{"a":true,"b":null},"y":1}}`},
		{`"a\u00e9\n"`, "\"aé\\n\""},
		{`{"acc\u006funt":1}`, `{"account":1}`},
		{`"\/\"\\\u0001"`, `"/\"\\\u0001"`},
		{`[{"b":1,"a":2},{"d":3,"c":4}]`, `[{"a":2,"b":1},{"c":4,"d":3}]`},
		{`-0.5e+10`, `-0.5e+10`},
		{`{}`, `{}`},
	}
	for _, tt := range tests {
		got, err := Normalize(nil, []byte(tt.in))
		if err != nil {
			t.Errorf("Normalize(%q): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Normalize(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeErrors(t *testing.T) {
	for _, in := range []string{
		`{`, `{"a"}`, `{"a":1,}`, `[1,]`, `tru`, `01`, `1.`, `1e`, `"abc`, `"\x"`,
		`{"a":1,"a":2}`, `{"b":1,"a":2,"b":3}`, `{"a":1,"\u0061":2}`, `1 2`, `{"a":1}}`, "\"\x01\"", "\"\xff\"",
	} {
		_, err := Normalize(nil, []byte(in))
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("Normalize(%q) error = %v, want a syntax error", in, err)
		}
	}
}

func TestFilter(t *testing.T) {
	var f Filter
	hs := make([]Hash, 20)
	for i := range hs {
		hs[i] = HashString(string(rune('a' + i)))
		f.Add(hs[i])
	}
	for _, h := range hs {
		if !f.MayHave(h) {
			t.Fatalf("filter lost %x", h)
		}
	}
	var empty Filter
	if empty.MayHave(hs[0]) {
		t.Fatal("empty filter claims a member")
	}
}

// FuzzNormalize checks that Normalize agrees with encoding/json on validity
// (except for duplicate keys, which Normalize refuses), that its output is
// valid JSON equal in meaning to the input, and that it is idempotent.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `[]`, `"\u0041"`, `-1.5e3`, `{"a":{"c":1,"b":2}}`, `{"a":1,"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(bytes.TrimSpace(in)) == 0 {
			in = nil // white space alone normalizes to null
		}
		out, err := Normalize(nil, in)
		if err != nil {
			if len(in) > 0 && json.Valid(in) && !errors.Is(err, ErrSyntax) {
				t.Fatalf("valid JSON %q refused with %v", in, err)
			}
			return
		}
		if len(in) > 0 && !json.Valid(in) {
			t.Fatalf("invalid JSON %q accepted as %q", in, out)
		}
		if !json.Valid(out) {
			t.Fatalf("output %q is not valid JSON", out)
		}
		again, err := Normalize(nil, out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
		var a, b any
		if len(in) > 0 {
			if json.Unmarshal(in, &a) == nil && json.Unmarshal(out, &b) == nil {
				ja, _ := json.Marshal(a)
				jb, _ := json.Marshal(b)
				if string(ja) != string(jb) {
					t.Fatalf("meaning changed: %q -> %q", in, out)
				}
			}
		}
	})
}

func TestField(t *testing.T) {
	obj, err := Normalize(nil, []byte(`{"path":"/a/b","opts":{"x":[1,{"y":"}"}]},"n":-1.5,"s":"q\"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"path": `"/a/b"`, "opts": `{"x":[1,{"y":"}"}]}`, "n": `-1.5`, "s": `"q\"x"`,
	} {
		got, ok := Field(obj, name)
		if !ok || string(got) != want {
			t.Errorf("Field(%q) = %s, %v; want %s", name, got, ok, want)
		}
	}
	if got, ok := Field(obj, "missing"); ok {
		t.Errorf("Field(missing) = %s, want absent", got)
	}
}
