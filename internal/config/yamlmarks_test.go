package config

import (
	"strings"
	"testing"
)

// TestValueBeginningWithYAMLMark: a value written unquoted that begins with
// *, & or ! is YAML's alias, anchor or tag, not text. A password or key
// that begins so (*Xk2..., &pw..., !QAZ...) was quoted whole in the error
// of an alias of no anchor (an error `reach serve` prints and a supervisor
// logs), and as an anchor or a tag it left the value empty with no error,
// so validate said ok and the upstream or model was sent no credential.
// Each is now an error that names the line and the key and quotes nothing
// of the value.
func TestValueBeginningWithYAMLMark(t *testing.T) {
	const secret = "Pw-3a9f-TOPSECRET"
	for _, tc := range []struct{ name, yaml, key string }{
		{"alias", "model:\n  base_url: http://127.0.0.1:1/v1\n  api_key: *" + secret + "\n", "line 3"},
		{"anchor", "model:\n  base_url: http://127.0.0.1:1/v1\n  api_key: &" + secret + "\n", "line 3"},
		{"tag", "model:\n  base_url: http://127.0.0.1:1/v1\n  api_key: !" + secret + "\n", "line 3"},
		{"header", "upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers:\n      Authorization: !" + secret + "\n", "line 5"},
		{"env", "upstreams:\n  - name: a\n    command: [x]\n    env:\n      TOKEN: &" + secret + "\n", "line 5"},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil {
			t.Errorf("%s: no error; the value was lost", tc.name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "TOPSECRET") || !strings.Contains(msg, tc.key) || !strings.Contains(msg, "quote") {
			t.Errorf("%s: %q; want the line (%s), a hint to quote, and nothing of the value", tc.name, msg, tc.key)
		}
	}
	// Anchors and aliases used as YAML means them still work, and a quoted
	// value that begins with a mark is text.
	ok := "budgets:\n  default: &b {turns: 30}\n  alice: *b\nmodel:\n  base_url: http://127.0.0.1:1/v1\n  api_key: \"*" + secret + "\"\n"
	c, err := Parse([]byte(ok), nil)
	if err != nil {
		t.Fatalf("anchors used as YAML, a quoted value: %v", err)
	}
	if got := c.Model.APIKey.Reveal(); got != "*"+secret {
		t.Errorf("the quoted key = %q", got)
	}
}

// TestSecretBeginningWithHash: an unquoted value that begins with # is a YAML
// comment, so `api_key: #abc` loaded as no key at all, with no error, and the
// model or upstream was sent no credential. A secret left empty or null with
// a # right after its key is now an error that names the line and the key,
// says to quote, and echoes nothing of the rest of the line.
func TestSecretBeginningWithHash(t *testing.T) {
	const secret = "Pw-3a9f-TOPSECRET"
	for _, tc := range []struct{ name, yaml, line string }{
		{"model", "model:\n  base_url: http://127.0.0.1:1/v1\n  api_key: #" + secret + "\n", "line 3"},
		{"model no space", "model:\n  base_url: http://127.0.0.1:1/v1\n  api_key:   \t#" + secret + "\n", "line 3"},
		{"header", "upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers:\n      Authorization: #" + secret + "\n", "line 5"},
		{"env", "upstreams:\n  - name: a\n    command: [x]\n    env:\n      TOKEN: #" + secret + "\n", "line 5"},
		{"store", "store: #" + secret + "\n", "line 1"},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil {
			t.Errorf("%s: no error; the value was lost to a comment", tc.name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "TOPSECRET") || !strings.Contains(msg, tc.line) || !strings.Contains(msg, "quote") {
			t.Errorf("%s: %q; want the line (%s), a hint to quote, and nothing of the value", tc.name, msg, tc.line)
		}
	}
	// A quoted value that begins with # is text; a comment on a line of its
	// own, or after a value, is still a comment; a non-secret left empty
	// with a comment is not this error.
	ok := "# reach\nmodel:\n  base_url: http://127.0.0.1:1/v1 # the endpoint\n  # the key:\n  api_key: \"#" + secret + "\" # quoted\n"
	c, err := Parse([]byte(ok), nil)
	if err != nil {
		t.Fatalf("a quoted key and comments: %v", err)
	}
	if got := c.Model.APIKey.Reveal(); got != "#"+secret {
		t.Errorf("the quoted key = %q", got)
	}
}

// FuzzSecretNotEchoed: whatever a secret's line holds (a value beginning
// with #, a tag, an anchor, an alias, flow syntax, or a ${VAR} whose value
// is the secret), Parse does not panic, and its error never echoes the
// secret: a marker only the secret holds never appears in it.
func FuzzSecretNotEchoed(f *testing.F) {
	const mark = "Qz7SECRETmk"
	slots := []string{
		"model:\n  base_url: http://127.0.0.1:1/v1\n  api_key: @\n",
		"upstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    headers:\n      Authorization: @\n",
		"upstreams:\n  - name: a\n    command: [x]\n    env:\n      TOKEN: @\n",
		"store: @\n",
		"listen: 127.0.0.1:1\nstore: @\ninstance: gw\n",
		"model:\n  base_url: http://127.0.0.1:1/v1\n  fallbacks:\n    - base_url: http://127.0.0.1:2/v1\n      model: m\n      api_key: @\n",
	}
	for i := range slots {
		for _, v := range [][2]string{{"#", ""}, {"# ", " x"}, {"!!int ", ""}, {"!!binary ", "=="}, {"&a ", ""}, {"*", ""},
			{"[", "]"}, {"{", ": 1}"}, {"postgres://u:", "@db/x"}, {"postgres://u:", "@/x"}, {"\"", ""}, {"'#", "'"}, {"| ", ""}, {"x: ", ""}} {
			f.Add(uint8(i), v[0], v[1], false)
			f.Add(uint8(i), v[0], v[1], true)
		}
	}
	f.Fuzz(func(t *testing.T, slot uint8, pre, post string, viaEnv bool) {
		// The secret's value stays on its line, where a secret goes.
		if strings.ContainsAny(pre+post, "\n\r\u0085\u2028\u2029") || strings.Contains(pre+post, mark) {
			return
		}
		secret := pre + mark + post
		val := secret
		if viaEnv {
			val = "${S}"
		}
		data := strings.Replace(slots[int(slot)%len(slots)], "@", val, 1)
		_, err := Parse([]byte(data), env(map[string]string{"S": secret}))
		if err != nil && strings.Contains(err.Error(), mark) {
			t.Fatalf("the error echoes the secret:\n%s\nerror: %v", data, err)
		}
	})
}

// TestSecretTaggedOrMappingNotEchoed (found by FuzzSecretNotEchoed): a
// secret written `api_key: !!int pw` was echoed by the YAML library's
// "cannot decode !!str `pw` as a !!int", and one written `{pw: 1}` was
// named as a key in the path of the error (model.api_key.pw wants a
// string). Each error now names the line and the secret's key only.
func TestSecretTaggedOrMappingNotEchoed(t *testing.T) {
	const secret = "Pw-3a9f-TOPSECRET"
	for _, tc := range []struct{ yaml, want string }{
		{"model:\n  base_url: http://127.0.0.1:1/v1\n  api_key: !!int " + secret + "\n", "line 3: model.api_key is tagged !!int"},
		{"upstreams:\n  - name: a\n    command: [x]\n    env:\n      TOKEN: !!float " + secret + "\n", "line 5: upstreams[0].env.TOKEN is tagged !!float"},
		{"model:\n  base_url: http://127.0.0.1:1/v1\n  api_key: {" + secret + ": 1}\n", "line 3: cannot unmarshal a mapping here; model.api_key wants a string"},
		{"store: [{" + secret + ": 1}]\n", "line 1: cannot unmarshal a list here; store wants a string"},
	} {
		_, err := Parse([]byte(tc.yaml), nil)
		if err == nil || strings.Contains(err.Error(), "TOPSECRET") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q, and nothing of the value", tc.yaml, err, tc.want)
		}
	}
}
