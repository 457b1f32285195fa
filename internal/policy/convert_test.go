package policy

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go/types"
)

func dec(t *testing.T, s string) types.Decimal {
	t.Helper()
	d, err := types.ParseDecimal(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNumbers(t *testing.T) {
	tests := []struct {
		in   string
		want types.Value
	}{
		{"0", types.Long(0)},
		{"-0", types.Long(0)},
		{"-0.0e5", types.Long(0)},
		{"42", types.Long(42)},
		{"-42", types.Long(-42)},
		{"2.0", types.Long(2)},
		{"2e0", types.Long(2)},
		{"1e3", types.Long(1000)},
		{"12.5e1", types.Long(125)},
		{"9223372036854775807", types.Long(math.MaxInt64)},
		{"-9223372036854775808", types.Long(math.MinInt64)},
		{"9223372036854775808", types.String("9223372036854775808")},
		{"1e19", types.String("1e19")},
		{"1e400", types.String("1e400")},
		{"1.5", dec(t, "1.5")},
		{"-1.5", dec(t, "-1.5")},
		{"0.0001", dec(t, "0.0001")},
		{"1e-4", dec(t, "0.0001")},
		{"9.99", dec(t, "9.99")},
		{"922337203685477.5807", dec(t, "922337203685477.5807")},
		{"-922337203685477.5808", dec(t, "-922337203685477.5808")},
		{"922337203685477.5808", types.String("922337203685477.5808")},
		{"0.00001", types.String("0.00001")},
		{"1.23456", types.String("1.23456")},
		{"3.14159265358979323846", types.String("3.14159265358979323846")},
		{"1.50000000000000000000000000", dec(t, "1.5")},
		{"1e-400", types.String("1e-400")},
	}
	for _, tt := range tests {
		got, err := Arguments([]byte(`{"n":` + tt.in + `}`))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		v, _ := got.(types.Record).Get("n")
		if !v.Equal(tt.want) {
			t.Errorf("%s: got %v (%T), want %v (%T)", tt.in, v, v, tt.want, tt.want)
		}
	}
}

func TestArguments(t *testing.T) {
	deep := strings.Repeat(`{"a":`, ArgumentDepth+1) + "1" + strings.Repeat("}", ArgumentDepth+1)
	tests := []struct {
		in, want string // want is the Cedar rendering
	}{
		{``, `{}`},
		{`null`, `{}`},
		{` {} `, `{}`},
		{`{"a":"x","b":true,"c":null,"d":[1,null,1,2],"e":{"f":false}}`, `{"a":"x", "b":true, "d":[1, 2], "e":{"f":false}}`},
		{`{"s":"caf\u00e9 \ud83d\ude00 \n\"\\\/"}`, `{"s":"café 😀 \n\"\\/"}`},
		{`{"s":"\ud83d"}`, `{"s":"` + "\uFFFD" + `"}`},
		{`{"s":"\ud83d\u0041"}`, `{"s":"` + "\uFFFDA" + `"}`},
		{`[1,2]`, `[1, 2]`},
	}
	for _, tt := range tests {
		got, err := Arguments([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if s := got.String(); s != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, s, tt.want)
		}
	}
	// Deeper than ArgumentDepth: the JSON text as a string.
	got, err := Arguments([]byte(deep))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.String(), `"{\"a\":1}"`) {
		t.Errorf("deep: %s", got)
	}
}

func TestArgumentErrors(t *testing.T) {
	for _, in := range []string{
		`{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `{"a":1}x`, `{"a":1,"a":2}`, `{"a":null,"a":2}`,
		`"\x"`, "\"a\x01\"", `"\u12"`, `01`, `1.`, `-`, `1e`, `tru`, `nul`, `{a:1}`,
		strings.Repeat("[", maxNesting+2) + strings.Repeat("]", maxNesting+2),
	} {
		if v, err := Arguments([]byte(in)); err == nil {
			t.Errorf("%q: got %v, want an error", in, v)
		}
	}
}

// TestArgumentSeparatorErrors: after a member or an element, the error
// names what the input lacks and where.
func TestArgumentSeparatorErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1`:    "at byte 6: unexpected end in an object",
		`{"a":1 x}`: "at byte 7: expected ',' or '}'",
		`[1`:        "at byte 2: unexpected end in an array",
		`[1 2]`:     "at byte 3: expected ',' or ']'",
		`{"a":[1}`:  "at byte 7: expected ',' or ']'",
		`[{"a":1]`:  "at byte 7: expected ',' or '}'",
	} {
		if _, err := Arguments([]byte(in)); err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%q: got %v, want an error ending %q", in, err, want)
		}
	}
}

// FuzzArguments: conversion never panics, accepts only valid JSON, accepts
// all valid JSON but duplicates and extreme nesting, and keeps integers exact.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2.5,"x",null,{"b":false}]}`, `{"n":-9223372036854775808}`,
		`{"n":1e-4}`, `{"s":"\ud83d\ude00"}`, `[[[[1]]]]`, `12345678901234567890`, `"\u0000"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Arguments(b)
		if err != nil {
			msg := err.Error()
			if json.Valid(b) && !strings.Contains(msg, "duplicate") && !strings.Contains(msg, "nested") {
				t.Fatalf("valid JSON %q refused: %v", b, err)
			}
			return
		}
		if len(strings.TrimSpace(string(b))) > 0 && !json.Valid(b) {
			t.Fatalf("invalid JSON %q accepted as %v", b, v)
		}
		if n, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); perr == nil {
			if !v.Equal(types.Long(n)) {
				t.Fatalf("%q: got %v, want Long %d", b, v, n)
			}
		}
	})
}

// FuzzArgumentFields: converting only some fields gives exactly those
// fields of the full conversion.
func FuzzArgumentFields(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,{"c":"}"}],"department":"x\"y"}`, `{"dep\u0061rtment":"hr","z":null}`,
		`{"a":null}`, `{"b":{"a":1},"a":2}`, `{"a":1,"a":2}`, `{}`, `[1]`, `{"x":"\\","a":tru}`} {
		f.Add([]byte(s))
	}
	fields := []string{"a", "department", "missing"}
	f.Fuzz(func(t *testing.T, b []byte) {
		part, perr := argumentFields(b, fields)
		full, ferr := Arguments(b)
		if ferr != nil {
			return // part of invalid input may convert; the runtime passes only valid JSON
		}
		if perr != nil {
			t.Fatalf("%q: full conversion works, fields fail: %v", b, perr)
		}
		fr, ok := full.(types.Record)
		if !ok {
			if !part.Equal(full) {
				t.Fatalf("%q: got %v, want %v", b, part, full)
			}
			return
		}
		pr := part.(types.Record)
		for _, k := range fields {
			fv, fok := fr.Get(types.String(k))
			pv, pok := pr.Get(types.String(k))
			if fok != pok || (fok && !fv.Equal(pv)) {
				t.Fatalf("%q field %s: got %v %v, want %v %v", b, k, pv, pok, fv, fok)
			}
		}
		if pr.Len() > len(fields) {
			t.Fatalf("%q: extra fields in %v", b, pr)
		}
	})
}
