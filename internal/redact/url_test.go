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

// TestURLsShown: every URL in a text is quoted as ShownURL quotes one
// (every query value hidden, whatever its name or look; the user; no
// fragment), and the text around it is kept.
func TestURLsShown(t *testing.T) {
	for in, want := range map[string]string{
		`Post "http://127.0.0.1:9/mcp?code=abc12&state=x": dial tcp: refused`: `Post "http://127.0.0.1:9/mcp?…": dial tcp: refused`,
		"see https://u:pw@h:8443/a/b#frag and ws://h/?x=1\tdone":              "see https://xxxxx@h:8443/a/b and ws://h/?…\tdone",
		"postgres://reach:hunter22@db/reach?sslmode=require":                  "postgres://xxxxx@db/reach?…",
		`{"url":"http://h/p?token=abc12\"}`:                                   `{"url":"http://h/p?…\"}`,
		"no url here, a ratio 3:// and http://plain/path":                     "no url here, a ratio 3:// and http://plain/path",
		"://h?x=1 has no scheme":                                              "://h?x=1 has no scheme",
		"two: http://a/?k=1 http://b/?k=2":                                    "two: http://a/?… http://b/?…",
	} {
		if got := URLsShown(in); got != want {
			t.Errorf("URLsShown(%q) = %q, want %q", in, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { URLsShown("calling http://127.0.0.1:7400/mcp now") }); n != 0 {
		t.Errorf("a text whose URLs show as they are: %v allocations, want none", n)
	}
}
