package modelproxy

import "testing"

// TestRenumber: the number at the top level is rewritten, whatever spells
// its name in a string or a nested object before it, and the rest of the
// event is left byte for byte.
func TestRenumber(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type":"x","sequence_number":7}`, `{"type":"x","sequence_number":9}`},
		{` { "delta" : "\"sequence_number\":1" , "item":{"sequence_number":2}, "sequence_number" : 7 , "z":[1]}`,
			` { "delta" : "\"sequence_number\":1" , "item":{"sequence_number":2}, "sequence_number" : 9 , "z":[1]}`},
		{`{"type":"x"}`, ""},
		{`[1]`, ""},
		{`{"type":"x",`, ""},
	} {
		got, ok := renumber([]byte(c.in), 9)
		if string(got) != c.want || ok != (c.want != "") {
			t.Errorf("renumber(%s) = %s, %v; want %s", c.in, got, ok, c.want)
		}
	}
}
