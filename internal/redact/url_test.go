package redact

import "testing"

func TestShownURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://h/a2a?key=AIzaSyA-secret":      "http://h/a2a?…",
		"https://user:pw@h:8443/mcp#frag":      "https://xxxxx@h:8443/mcp",
		"https://apikey@h/mcp?":                "https://xxxxx@h/mcp?…",
		"http://127.0.0.1:7400/mcp":            "http://127.0.0.1:7400/mcp",
		"http://h/%zz":                         "(a URL that does not parse)",
		"https://h/p?api-key=k&x=1#a?key=leak": "https://h/p?…",
	} {
		if got := ShownURL(in); got != want {
			t.Errorf("ShownURL(%q) = %q, want %q", in, got, want)
		}
	}
}
