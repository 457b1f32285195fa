package callgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
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
		{`-0.5e+10`, `-5000000000`},
		// Numbers: one spelling of their exact decimal value.
		{`[1.0, 1e0, 10e-1, 0.1e1, 1]`, `[1,1,1,1,1]`},
		{`[1.50, 15e-1, 150E-2]`, `[1.5,1.5,1.5]`},
		{`[-0, -0.0, 0e5, 0.000]`, `[0,0,0,0]`},
		{`[1e-7, 0.0000001, 0.000001, 1e-6]`, `[1e-7,1e-7,0.000001,0.000001]`},
		{`[1e21, 123e20, 1e39, 1e40, 10000000000000000000000000000000000000000]`,
			`[1000000000000000000000,12300000000000000000000,1000000000000000000000000000000000000000,1e40,10000000000000000000000000000000000000000]`},
		// An integer literal reaches its tool as written, however long.
		{`115792089237316195423570985008687907853269984665640564039457584007913129639935`, `115792089237316195423570985008687907853269984665640564039457584007913129639935`},
		{`[12345678901234567890123, 9007199254740993]`, `[12345678901234567890123,9007199254740993]`},
		{`[-12.340e1, 1E+2, 1e400, 1e-400]`, `[-123.4,100,1e400,1e-400]`},
		{`1e1000000000000`, `1e1000000000000`},
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

// TestNormalizeTooDeep: a value inside more than MaxDepth arrays and
// objects is refused for its depth (ErrTooDeep), not as a syntax error,
// valid or not past it; one inside MaxDepth is accepted.
func TestNormalizeTooDeep(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	if _, err := Normalize(nil, []byte(deep(MaxDepth+1))); err != nil { // the innermost array is inside MaxDepth
		t.Errorf("an array inside %d: %v, want accepted", MaxDepth, err)
	}
	for _, in := range []string{deep(MaxDepth + 2), `{"a":` + deep(MaxDepth+1) + `}`, strings.Repeat("[", MaxDepth+2) + "tru"} {
		_, err := Normalize(nil, []byte(in))
		var de *DepthError
		if !errors.Is(err, ErrTooDeep) || errors.Is(err, ErrSyntax) || !errors.As(err, &de) || de.Offset <= MaxDepth {
			t.Errorf("Normalize(%.20q...) error = %v, want too deep at its offset, no syntax error", in, err)
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
			if len(in) > 0 && json.Valid(in) && !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrTooDeep) {
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
			if json.Unmarshal(in, &a) == nil && json.Unmarshal(out, &b) == nil && !sameJSON(a, b) {
				t.Fatalf("meaning changed: %q -> %q", in, out)
			}
		}
	})
}

// sameJSON reports whether two decoded JSON values are equal (numbers as
// float64, so -0 is 0).
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if w, ok := b[k]; !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return a == b
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

// FuzzNumber: a number normalizes to a spelling of its exact value, and
// two numbers of the same value to the same spelling (but an integer
// literal longer than maxIntDigits, which stays as written).
func FuzzNumber(f *testing.F) {
	for _, s := range [][2]string{{"1.0", "1"}, {"15e-1", "1.50"}, {"-0", "0e7"}, {"1e-7", "0.0000001"}, {"1e40", "10e39"}, {"123.456e2", "12345.6"}} {
		f.Add(s[0], s[1])
	}
	exact := func(s string) (*big.Rat, bool) {
		if !json.Valid([]byte(s)) || strings.ContainsAny(s, "[{\" tfn") {
			return nil, false
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 && len(strings.TrimLeft(s[i+1:], "+-0")) > 3 {
			return nil, false // big.Rat would hold 10^huge
		}
		r, ok := new(big.Rat).SetString(s)
		return r, ok
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ra, ok := exact(a)
		if !ok {
			return
		}
		na, err := Normalize(nil, []byte(a))
		if err != nil {
			t.Fatalf("Normalize(%q): %v", a, err)
		}
		if rn, ok := new(big.Rat).SetString(string(na)); !ok || rn.Cmp(ra) != 0 {
			t.Fatalf("Normalize(%q) = %s, another value", a, na)
		}
		rb, ok := exact(b)
		if !ok || rb.Cmp(ra) != 0 {
			return
		}
		long := func(s string) bool { // an integer literal beyond maxIntDigits is kept as written
			return !strings.ContainsAny(s, ".eE") && len(strings.TrimPrefix(s, "-")) > maxIntDigits
		}
		if long(a) != long(b) {
			return
		}
		if nb, _ := Normalize(nil, []byte(b)); string(nb) != string(na) {
			t.Fatalf("%q and %q are the same number, normalized %s and %s", a, b, na, nb)
		}
	})
}
