package mcpwire

import (
	"testing"
	"unsafe"
)

// TestParseCallParamsKnown: a tool name the caller knows is taken as the
// caller's string (the registered name), not copied from the params'
// bytes: no allocation for it. A name it does not know, or one with an
// escape, is read as ParseCallParams reads it.
func TestParseCallParamsKnown(t *testing.T) {
	registered := "up__echo"
	known := func(b []byte) (string, bool) {
		if string(b) == registered {
			return registered, true
		}
		return "", false
	}
	params := []byte(`{"name":"up__echo","arguments":{"text":"hi"}}`)
	var p CallParams
	if err := ParseCallParamsKnown(params, &p, known); err != nil || p.Name != registered ||
		unsafe.StringData(p.Name) != unsafe.StringData(registered) || string(p.Arguments) != `{"text":"hi"}` {
		t.Fatalf("known name: %q (%v), arguments %s", p.Name, err, p.Arguments)
	}
	for _, tc := range []struct{ params, name string }{
		{`{"name":"other","arguments":{}}`, "other"},
		{`{"name":"up__ech\u006f","arguments":{}}`, "up__echo"}, // escaped: Unquote's
		{`{"name":"up__echo ","arguments":{}}`, "up__echo "},
	} {
		var p CallParams
		if err := ParseCallParamsKnown([]byte(tc.params), &p, known); err != nil || p.Name != tc.name {
			t.Errorf("%s: name %q (%v), want %q", tc.params, p.Name, err, tc.name)
		}
		var want CallParams
		if err := ParseCallParams([]byte(tc.params), &want); err != nil || want.Name != p.Name {
			t.Errorf("%s: ParseCallParams reads %q, ParseCallParamsKnown %q", tc.params, want.Name, p.Name)
		}
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(100, func() { p = CallParams{}; _ = ParseCallParamsKnown(params, &p, known) }); n > 1 {
		t.Errorf("ParseCallParamsKnown of a known name: %v allocations, want 1 (the arguments' copy)", n)
	}
}
