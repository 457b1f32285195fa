package callgraph

import "testing"

func TestAgentMeta(t *testing.T) {
	for in, want := range map[string]string{
		``:                     `{}`,
		"  \n":                 `{}`,
		` {"b": 2, "a": "x"} `: `{"a":"x","b":2}`,
		`{"tenant":{"id":7}}`:  `{"tenant":{"id":7}}`,
	} {
		got, err := AgentMeta("billing", []byte(in))
		if err != nil || string(got) != want {
			t.Errorf("AgentMeta(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`[1]`, `"x"`, `{`, `12`} {
		if _, err := AgentMeta("billing", []byte(in)); err == nil || err.Error() != "delegate to billing: the metadata is not a JSON object" {
			t.Errorf("AgentMeta(%q) error = %v; want that it is not a JSON object", in, err)
		}
	}
}
