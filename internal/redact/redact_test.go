package redact_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/redact"
)

const token = "ghp_S3cr3tT0kenValue"

func mustNew(t testing.TB, opts *redact.Options) *redact.Redactor {
	t.Helper()
	r, err := redact.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newRedactor has the registered values and extra key of both former
// redactors' tests.
func newRedactor(t testing.TB) *redact.Redactor {
	return mustNew(t, &redact.Options{Keys: []string{"x-internal"},
		Secrets: []string{token, "hunter22", "12345678", "sk-live-0123456789", "98765432"}})
}

func TestRedactJSON(t *testing.T) {
	r := newRedactor(t)
	tests := []struct{ name, in, want string }{
		{"nothing", `{"query":"x","limit":3}`, `{"query":"x","limit":3}`},
		{"by name", `{"password":"hunter2","user":"bob"}`, `{"password":"[REDACTED]","user":"bob"}`},
		{"a number by name", `{"API_KEY": 12345}`, `{"API_KEY": "[REDACTED]"}`},
		{"names ignore case and separators", `{"x-api-key":"abc","X.Auth.Token":"t","API-Key":1,"Set-Cookie":["a"],"github_token":"t","clientSecret":{"a":1},"X_Internal":"i"}`,
			`{"x-api-key":"[REDACTED]","X.Auth.Token":"[REDACTED]","API-Key":"[REDACTED]","Set-Cookie":"[REDACTED]","github_token":"[REDACTED]","clientSecret":"[REDACTED]","X_Internal":"[REDACTED]"}`},
		{"authorization", `{"Authorization":"Bearer abc"}`, `{"Authorization":"[REDACTED]"}`},
		{"nested under a secret name", `{"client_secret":{"a":1,"b":[1,"x",{"c":null}]},"ok":true}`, `{"client_secret":"[REDACTED]","ok":true}`},
		{"auth object", `{"auth":{"user":"u","pass":"p"}}`, `{"auth":"[REDACTED]"}`},
		{"not secret names", `{"author":"Bob","authority":"x","keyword":"k","description":"d","pinned":true}`, `{"author":"Bob","authority":"x","keyword":"k","description":"d","pinned":true}`},
		// Where the two former redactors disagreed, the safer rule: a name
		// that contains "token" is secret, save a count of tokens.
		{"token counts are kept", `{"max_tokens":100,"token_count":3,"input_tokens":7}`, `{"max_tokens":100,"token_count":3,"input_tokens":7}`},
		{"token names are secret", `{"access_token":"x","tokens":"abc","token_type":"Bearer","x-api-token":"t","accessToken":"a","tokens_list":[1]}`,
			`{"access_token":"[REDACTED]","tokens":"[REDACTED]","token_type":"[REDACTED]","x-api-token":"[REDACTED]","accessToken":"[REDACTED]","tokens_list":"[REDACTED]"}`},
		{"in arrays", `[{"session_id":"s1"},{"ok":1}]`, `[{"session_id":"[REDACTED]"},{"ok":1}]`},
		{"nested", `{"a":[{"b":{"refresh_token":"r"}},"x"]}`, `{"a":[{"b":{"refresh_token":"[REDACTED]"}},"x"]}`},
		{"an escaped name", `{"pass\u0077ord":"x"}`, `{"pass\u0077ord":"[REDACTED]"}`},
		{"a header in a text value", `{"cmd":"curl -H 'Authorization: Bearer abc123' x"}`, `{"cmd":"curl -H 'Authorization: [REDACTED]' x"}`},
		{"a query in a text value", `{"note":"password=hunter2&user=bob"}`, `{"note":"password=[REDACTED]&user=bob"}`},
		{"a bearer token in a text value", `{"h":"Bearer eyJhbGciOi.x.y"}`, `{"h":"Bearer [REDACTED]"}`},
		{"a pair in a text value", `{"content":[{"type":"text","text":"connect with password=pw12345 now"}]}`,
			`{"content":[{"type":"text","text":"connect with password=[REDACTED] now"}]}`},
		{"prose in a text value", `{"text":"Our basic subscription costs $10; each call spends one token whenever it runs."}`,
			`{"text":"Our basic subscription costs $10; each call spends one token whenever it runs."}`},
		{"JSON in a text value", `{"text":"{\"password\":\"pw12345\"}"}`, `{"text":"{\"password\":\"[REDACTED]\"}"}`},
		{"an array under a name in a text value", `{"query":"cfg {\"password\":[\"hunter2hunter2\"]}"}`, `{"query":"cfg {\"password\":\"[REDACTED]\"}"}`},
		// Registered values, wherever they are.
		{"registered value", `{"key":"sk-live-0123456789"}`, `{"key":"[REDACTED]"}`},
		{"inside text", `{"note":"use ` + token + ` to log in"}`, `{"note":"use [REDACTED] to log in"}`},
		{"in a URL", `{"url":"https://api/x?k=sk-live-0123456789&q=1"}`, `{"url":"https://api/x?k=[REDACTED]&q=1"}`},
		{"in a name", `{"sk-live-0123456789":1}`, `{"[REDACTED]":1}`},
		{"escaped", `{"k":"sk-live-\u00301234\u0035\u0036789"}`, `{"k":"[REDACTED]"}`},
		{"escaped capital", `{"note":"` + strings.Replace(token, "S", `\u0053`, 1) + `"}`, `{"note":"[REDACTED]"}`},
		{"as a number", `{"pin_code_x":1,"n":98765432,"code":12345678}`, `{"pin_code_x":1,"n":"[REDACTED]","code":"[REDACTED]"}`},
		{"spacing kept", "{ \"a\" : [ 1 , \"hunter22\" ] ,\n \"pwd\" : null }", "{ \"a\" : [ 1 , \"[REDACTED]\" ] ,\n \"pwd\" : \"[REDACTED]\" }"},
		{"top-level string", `"hunter22"`, `"[REDACTED]"`},
		{"empty", `{}`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Redact([]byte(tt.in))
			if string(got) != tt.want {
				t.Errorf("Redact(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("output is not JSON: %s", got)
			}
			if s := r.RedactString(tt.in); s != tt.want {
				t.Errorf("RedactString(%s)\n got %s", tt.in, s)
			}
		})
	}
}

func TestRedactText(t *testing.T) {
	r := mustNew(t, &redact.Options{Secrets: []string{token, "sk-live-0123456789", `p"q\r`}})
	tests := []struct{ name, in, want string }{
		{"nothing to hide", "nothing to hide: 3 results", "nothing to hide: 3 results"},
		{"the order", "the order A1 was refunded", "the order A1 was refunded"},
		{"pairs", "password: hunter2, user: bob", "password: [REDACTED], user: bob"},
		{"JSON in a message", `login failed for {"user":"bob","password":"hunter2"}`, `login failed for {"user":"bob","password":"[REDACTED]"}`},
		{"header", "Authorization: Bearer abc.def", "Authorization: [REDACTED]"},
		{"bearer alone", "use Bearer abc.def next time", "use Bearer [REDACTED] next time"},
		{"basic credentials alone", "upstream rejected Basic YWxhZGRpbjpvcGVuc2VzYW1l", "upstream rejected Basic [REDACTED]"},
		{"token scheme", "Authorization: token abcdefghijklmnop", "Authorization: [REDACTED]"},
		{"token in text", "sent token abcd-efgh-ijkl to the server", "sent token [REDACTED] to the server"},
		{"harmless words", "the author: Bob; the key: idea", "the author: Bob; the key: idea"},
		{"counts", "max_tokens=100 tokens=20 api_key=zzz", "max_tokens=100 tokens=20 api_key=[REDACTED]"},
		{"not a pair", "x == y", "x == y"},
		{"query", "GET /x?user=bob&password=pw1&api_key=zz", "GET /x?user=bob&password=[REDACTED]&api_key=[REDACTED]"},
		{"key in a URL", "GET https://api.example.com/v1?api_key=abc123&user=bob", "GET https://api.example.com/v1?api_key=[REDACTED]&user=bob"},
		{"partial JSON", `{"user":"bob","token":"abc","more":`, `{"user":"bob","token":"[REDACTED]","more":`},
		{"cut inside a secret value", `{"password":"hun`, `{"password":"[REDACTED]`},
		{"cut inside a secret object", `{"a":1,"token":{"x":[1,2`, `{"a":1,"token":"[REDACTED]"`},
		{"not JSON", `not json password=x`, `not json password=[REDACTED]`},
		{"registered value", "key sk-live-0123456789 rejected", "key [REDACTED] rejected"},
		{"registered value again", "login failed for " + token, "login failed for [REDACTED]"},
		{"the JSON-escaped form", `{"k":"p\"q\\r"}`, `{"k":"[REDACTED]"}`},
		{"a preview cut inside a secret", "result: sk-live-01", "result: [REDACTED]"},
		{"a short start is a word", "ask-", "ask-"},
		// D5: an array or object under a secret name in text, and escaped
		// JSON in text.
		{"an array under a name", `cfg {"password":["hunter2hunter2"]}`, `cfg {"password":"[REDACTED]"}`},
		{"escaped JSON", `cfg {\"password\":[\"hunter2hunter2\"], \"user\":\"bob\"}`, `cfg {\"password\":\"[REDACTED]\", \"user\":\"bob\"}`},
		{"an object under a name", `auth={"user":"u","pass":"p"} ok`, `auth=[REDACTED] ok`},
		{"a cookie list", `Cookie: ["sid=abc", "x=y"] then`, `Cookie: [REDACTED] then`},
		{"nested", `{"a":{"b":[{"session_id":["s1",{"k":"v"}]}]}}`, `{"a":{"b":[{"session_id":"[REDACTED]"}]}}`},
		{"escaped twice", `{\"request\":\"{\\\"token\\\":\\\"abc\\\"}\"}`, `{\"request\":\"{\\\"token\\\":\\\"[REDACTED]\\\"}\"}`},
		{"after an escape", `log: connecting\npwd=abc\nfailed`, `log: connecting\npwd=[REDACTED]\nfailed`},
		{"after an escape, not a JSON string", `log: "x" connecting\npwd=abc\nfailed`, `log: "x" connecting\npwd=[REDACTED]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.RedactString(tt.in); got != tt.want {
				t.Errorf("RedactString(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if got := string(r.Redact([]byte(tt.in))); got != tt.want && !json.Valid([]byte(tt.in)) {
				t.Errorf("Redact(%q)\n got %q", tt.in, got)
			}
		})
	}
}

func TestNothingToRedactIsNotCopied(t *testing.T) {
	r := newRedactor(t)
	for _, in := range []string{`{"order":"A1","amount":20}`, `{"query":"x"}`, "Order 1001: shipped"} {
		b := []byte(in)
		if out := r.Redact(b); &out[0] != &b[0] {
			t.Errorf("%s was copied", in)
		}
		if out := r.Values(b); &out[0] != &b[0] {
			t.Errorf("%s was copied by Values", in)
		}
	}
}

func TestAdd(t *testing.T) {
	r := mustNew(t, nil)
	if err := r.Add("abc", "", "long enough"); err == nil || strings.Contains(err.Error(), "abc") {
		t.Errorf("short value: %v", err)
	}
	if r.Len() != 1 {
		t.Errorf("%d values", r.Len())
	}
	if got := r.RedactString("x long enough"); got != "x [REDACTED]" {
		t.Errorf("got %q", got)
	}
	// Longest first: a secret containing another is masked whole.
	r.Add("long enough and more")
	if got := r.RedactString("long enough and more"); got != "[REDACTED]" {
		t.Errorf("got %q", got)
	}
	if _, err := redact.New(&redact.Options{Secrets: []string{"abc"}}); err == nil {
		t.Error("New accepted a 3-byte secret")
	}
}

func TestSecretKey(t *testing.T) {
	r := mustNew(t, nil)
	for _, k := range []string{"password", "Password", "db_password", "passwd", "pwd", "secret", "client_secret", "api_key", "apiKey",
		"X-API-Key", "authorization", "Proxy-Authorization", "cookie", "Set-Cookie", "access_token", "refreshToken", "id_token",
		"private_key", "credentials", "session_id", "passphrase", "x-reach-key", "token_type", "x-api-token", "accessToken",
		"tokens", "session", "dsn", "connection_string", "signature", "pin", "otp", "bearer", "auth", "pass", "API KEY"} {
		if !r.SecretKey(k) {
			t.Errorf("%s is not secret", k)
		}
	}
	for _, k := range []string{"key", "keyword", "author", "authority", "username", "description", "pinned", "passage", "name"} {
		if r.SecretKey(k) {
			t.Errorf("%s is secret", k)
		}
	}
	for k, want := range map[string]bool{"max_tokens": true, "input_tokens": true, "token_count": true, "tokens": true,
		"access_token": false, "secret_tokens": false, "token": false} {
		if got := r.CountKey(k); got != want {
			t.Errorf("CountKey(%s) = %v, want %v", k, got, want)
		}
	}
}

// TestValues: only the registered values are masked, also when a JSON
// string escapes them; secret names and the text rules are left.
func TestValues(t *testing.T) {
	r := mustNew(t, &redact.Options{Secrets: []string{"sk/live-42abc"}})
	for in, want := range map[string]string{
		`{"token":"Hello","text":"key is sk\/live-42abc"}`: `{"token":"Hello","text":"key is [REDACTED]"}`,
		`{"password":"x","n":1}`:                           `{"password":"x","n":1}`,
		`plain sk/live-42abc and password=hunter2`:         `plain [REDACTED] and password=hunter2`,
		`raw JSON text sk\/live-42abc`:                     `raw JSON text [REDACTED]`,
		`{"a":"nothing here"}`:                             `{"a":"nothing here"}`,
	} {
		if got := string(r.Values([]byte(in))); got != want {
			t.Errorf("Values(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestValuesEscapedInText: a registered value that a JSON document in a
// string spells escaped (a model's tool call arguments, which Python's
// json.dumps writes with \u00f6 for ö) is masked by Values as by Redact;
// the names and the text rules are still left.
func TestValuesEscapedInText(t *testing.T) {
	r := mustNew(t, &redact.Options{Secrets: []string{"Passwört-2024-xyz", "sk-live-SECRET-9f8e7d"}})
	for in, want := range map[string]string{
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"login","arguments":"{\"user\":\"bob\",\"pwd\":\"Passw\\u00f6rt-2024-xyz\"}"}}]}}]}`: `{"choices":[{"message":{"tool_calls":[{"function":{"name":"login","arguments":"{\"user\":\"bob\",\"pwd\":\"[REDACTED]\"}"}}]}}]}`,
		`{"arguments":"{\"q\":\"\\u0073k-live-SECRET-9f8e7d\",\"token\":\"t\"}"}`:                                                                       `{"arguments":"{\"q\":\"[REDACTED]\",\"token\":\"t\"}"}`,
		`{"content":"say \\\"sk-live-SECRET\\u002d9f8e7d\\\" twice"}`:                                                                                   `{"content":"say \\\"[REDACTED]\\\" twice"}`,
	} {
		if got := string(r.Values([]byte(in))); got != want {
			t.Errorf("Values(%s)\n got %s\nwant %s", in, got, want)
		}
		if strings.Contains(string(r.Redact([]byte(in))), "xyz") {
			t.Errorf("Redact(%s) shows the value", in)
		}
	}
}

// TestValuesKeepLineBreaks: a model's answer of several lines, with code
// in it that holds a backslash escape, is no escaped JSON string: the
// value in it is masked and its line breaks stay line breaks (Values had
// read it unescaped and written it anew, each line break as \n), a value
// spelled escaped in it included.
func TestValuesKeepLineBreaks(t *testing.T) {
	r := mustNew(t, &redact.Options{Secrets: []string{"sk-live-SECRET-9f8e7d"}})
	for in, want := range map[string]string{
		`{"content":"Run:\n  printf 'a\\tb'\nwith key sk-live-SECRET-9f8e7d"}`:       `{"content":"Run:\n  printf 'a\\tb'\nwith key [REDACTED]"}`,
		`{"content":"Run:\n  printf 'a\\tb'\nwith key \\u0073k-live-SECRET-9f8e7d"}`: `{"content":"Run:\n  printf 'a\\tb'\nwith key [REDACTED]"}`,
	} {
		if got := string(r.Values([]byte(in))); got != want {
			t.Errorf("Values(%s)\n got %s\nwant %s", in, got, want)
		}
	}
}

// TestBlocks (D7): a secret, or a name and its value, that one content
// block ends and the next begins is masked, in the block where it begins.
func TestBlocks(t *testing.T) {
	const secret = "sk-fx-SECRETVALUE-1234567890"
	r := mustNew(t, &redact.Options{Secrets: []string{secret}})
	tests := []struct{ in, want []string }{
		{[]string{"Bearer sk-fx-SECR", "ETVALUE-1234567890"}, []string{"Bearer [REDACTED]", ""}},
		{[]string{"key sk-fx-SECR", "ETVALUE-1234567890 done"}, []string{"key [REDACTED]", " done"}},
		{[]string{"a", "sk-fx-", "SECRETVALUE-", "1234567890", "b"}, []string{"a", "[REDACTED]", "", "", "b"}},
		{[]string{"password", "=hunter2 ok"}, []string{"password", "=[REDACTED] ok"}},
		{[]string{"nothing", "here"}, []string{"nothing", "here"}},
	}
	for _, tt := range tests {
		got := r.Blocks(tt.in)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("Blocks(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// In a tool result's content array, as Redact finds it.
	in := `{"content":[{"type":"text","text":"Bearer sk-fx-SECR"},{"type":"image","data":"x"},{"type":"text","text":"ETVALUE-1234567890"}]}`
	want := `{"content":[{"type":"text","text":"Bearer [REDACTED]"},{"type":"image","data":"x"},{"type":"text","text":""}]}`
	if got := string(r.Redact([]byte(in))); got != want {
		t.Errorf("Redact(%s)\n got %s\nwant %s", in, got, want)
	}
	if got := string(r.Redact([]byte(`[` + in + `]`))); got != `[`+want+`]` {
		t.Errorf("in an array: %s", got)
	}
}

// TestStream: a secret split across the pieces of a streamed text is
// masked; text that only looks like a secret's start is passed on whole,
// a piece later; the start of a secret that never comes whole is masked
// when it is long enough to give part of it away.
func TestStream(t *testing.T) {
	r := mustNew(t, &redact.Options{Secrets: []string{"sk-live-0123456789"}})
	tests := []struct {
		pieces []string
		want   string
	}{
		{[]string{"the key is sk-li", "ve-0123", "456789, use it"}, "the key is [REDACTED], use it"},
		{[]string{"s", "k-live-0123456789"}, "[REDACTED]"},
		{[]string{"ask", "-me later: sk", "y"}, "ask-me later: sky"},
		{[]string{"whole sk-live-0123456789 in one"}, "whole [REDACTED] in one"},
		{[]string{"cut at the end: sk-live-01"}, "cut at the end: [REDACTED]"},
		{[]string{"short start: sk"}, "short start: sk"},
	}
	for _, tt := range tests {
		s := r.Stream()
		var out strings.Builder
		if whole := string(r.Values([]byte(strings.Join(tt.pieces, "")))); whole != tt.want {
			t.Errorf("%q: masked whole %q, want %q", tt.pieces, whole, tt.want)
		}
		for _, p := range tt.pieces {
			got := s.Next(p)
			if strings.Contains(got, "0123456789") || strings.Contains(out.String()+got, "sk-live-0123456789") {
				t.Errorf("%q: a piece gave away the secret: %q", tt.pieces, got)
			}
			out.WriteString(got)
		}
		out.WriteString(s.Flush())
		if out.String() != tt.want {
			t.Errorf("%q: streamed %q, want %q", tt.pieces, out.String(), tt.want)
		}
	}
}

// TestStreamEscaped: a value that a streamed text spells with JSON
// escapes (a tool call's arguments, streamed piecewise) is masked wherever
// the pieces cut it, an escape included, as in the text in one piece.
func TestStreamEscaped(t *testing.T) {
	r := mustNew(t, &redact.Options{Secrets: []string{"Passwört-2024-xyz", "sk-live-SECRET-9f8e7d", "emoji-😀-key-99"}})
	for text, want := range map[string]string{
		`{"user":"bob","pwd":"Passw\u00f6rt-2024-xyz"}`:      `{"user":"bob","pwd":"[REDACTED]"}`,
		`{"q":"\u0073k-live-SECRET-9f8e7d","n":1}`:           `{"q":"[REDACTED]","n":1}`,
		`{"q":"sk\u002dlive-SECRET\u002d9f8e7d"}`:            `{"q":"[REDACTED]"}`,
		`{"k":"emoji-\ud83d\ude00-key-99"}`:                  `{"k":"[REDACTED]"}`,
		`{"q":"sk-live-SECRET-9f8e7d","path":"C:\\tmp"}`:     `{"q":"[REDACTED]","path":"C:\\tmp"}`,
		`{"q":"\\u0073k-live-SECRET-9f8e7d is not escaped"}`: `{"q":"\\u0073k-live-SECRET-9f8e7d is not escaped"}`,
	} {
		one := r.Stream()
		if got := one.Next(text) + one.Flush(); got != want {
			t.Errorf("%s in one piece: %s, want %s", text, got, want)
		}
		for cut1 := 0; cut1 <= len(text); cut1++ {
			for cut2 := cut1; cut2 <= len(text); cut2++ {
				s := r.Stream()
				got := s.Next(text[:cut1]) + s.Next(text[cut1:cut2]) + s.Next(text[cut2:]) + s.Flush()
				if got != want {
					t.Fatalf("%s cut at %d and %d: streamed %s, want %s", text, cut1, cut2, got, want)
				}
			}
		}
	}
}

// TestStreamOverlappingSecrets: with a secret that begins another, a
// stream masks as masking the whole text does, wherever it is cut.
func TestStreamOverlappingSecrets(t *testing.T) {
	r := mustNew(t, &redact.Options{Secrets: []string{"abcd1234", "abcd1234efgh5678", "zz-key-99"}})
	for _, text := range []string{"x abcd1234efgh5678 y", "x abcd1234 y", "a zz-key-99abcd1234efgh5678!", "abcd1234abcd1234efgh", "end abcd1234efgh"} {
		want := string(r.Values([]byte(text)))
		for cut1 := 0; cut1 <= len(text); cut1++ {
			for cut2 := cut1; cut2 <= len(text); cut2++ {
				s := r.Stream()
				got := s.Next(text[:cut1]) + s.Next(text[cut1:cut2]) + s.Next(text[cut2:]) + s.Flush()
				if got != want {
					t.Fatalf("%q cut at %d and %d: streamed %q, masked whole %q", text, cut1, cut2, got, want)
				}
			}
		}
	}
}

// TestStreamFlushKeepsWords: a text that ends with a word that merely
// begins a secret ends as it is; the start of a secret that gives away
// enough of it is masked.
func TestStreamFlushKeepsWords(t *testing.T) {
	r := mustNew(t, &redact.Options{Secrets: []string{"test-api-key-123"}})
	for text, want := range map[string]string{
		"upgrade to the latest": "upgrade to the latest",
		"the key: test-api-k":   "the key: [REDACTED]",
	} {
		s := r.Stream()
		if got := s.Next(text) + s.Flush(); got != want {
			t.Errorf("%q streamed as %q, want %q", text, got, want)
		}
		if got := r.RedactString(text); got != want {
			t.Errorf("%q masked as %q, want %q", text, got, want)
		}
	}
}

// A tool that returns text returns a JSON string: a quoted value inside it
// is written with escaped quotes (API_TOKEN=\"...\"), and the secret
// behind a secret name must not get through.
func TestJSONStringWithQuotedValue(t *testing.T) {
	const secret = "sk-live-Zq81mNx"
	r := mustNew(t, nil)
	for _, result := range []string{
		`"API_TOKEN=\"` + secret + `\"\nDEBUG=1\n"`,
		`"export password=\"` + secret + `\""`,
		`"password: \"` + secret + `\""`,
	} {
		if out := r.Redact([]byte(result)); strings.Contains(string(out), secret) || !json.Valid(out) {
			t.Errorf("Redact(%s) = %s", result, out)
		}
	}
}

// Text that starts like JSON but is not JSON is still text: its "name:
// value" pairs and Bearer tokens are masked. So are arguments that are not
// JSON.
func TestTextThatLooksLikeJSON(t *testing.T) {
	const secret = "hunter2-Xy9"
	r := mustNew(t, nil)
	for _, in := range []string{
		"[step 1] logging in with password: " + secret,
		"[login] Authorization: Bearer " + secret,
		"{login failed} token: " + secret,
		"[upstream] sent Bearer " + secret,
		`{'password': '` + secret + `'}`,
		`{password: "` + secret + `"}`,
	} {
		if out := r.Redact([]byte(in)); strings.Contains(string(out), secret) {
			t.Errorf("Redact(%q) = %q", in, out)
		}
		if out := r.RedactString(in); strings.Contains(out, secret) {
			t.Errorf("RedactString(%q) = %q", in, out)
		}
	}
}

// Text often holds a JSON document (an upstream's error body in a
// message): a secret-named member inside a JSON string there is written
// with escaped quotes (\"password\": \"...\") or after an escape such as
// \n, and must not get through either.
func TestTextHoldingJSONString(t *testing.T) {
	const secret = "Zq81mNxWv"
	r := mustNew(t, nil)
	for _, msg := range []string{
		`upstream answered 400: {"error":"bad login","detail":"password: \"` + secret + `\""}`,
		`upstream answered 400: {"request":"{\"password\": \"` + secret + `\"}"}`,
		`upstream answered 400: {"request":"{\"token\":\"` + secret + `\"}"}`,
		`upstream answered 400: {"log":"connecting\npwd=` + secret + `\nfailed"}`,
		`upstream answered 400: {"log":"sent\nBearer ` + secret + `\nfailed"}`,
		`upstream answered 400: {"request":"{\"password\":[\"` + secret + `\"]}"}`,
	} {
		if out := r.RedactString(msg); strings.Contains(out, secret) {
			t.Errorf("RedactString(%s) = %s", msg, out)
		}
	}
}

// A registered value is masked "also JSON-escaped, also as the cut end of a
// text": that holds too when the text is cut inside the escape of one of
// its characters (a quote written \").
func TestCutInsideEscapedSecret(t *testing.T) {
	const secret = `Zq81"mNxWv`
	r := mustNew(t, &redact.Options{Secrets: []string{secret}})
	for _, in := range []string{
		`{"note":"` + `Zq81\`,        // a JSON preview cut after the backslash
		`upstream said: {"k":"Zq81\`, // text holding such a preview
		`"Zq81\`,
	} {
		if out := r.RedactString(in); strings.Contains(out, "Zq81") {
			t.Errorf("RedactString(%s) = %s: the start of the secret is there", in, out)
		}
	}
}

// A name spells a secret when it holds one whole, in a form the rules
// know; one that only ends in its start does not, though Values masks
// such an end (a text cut mid-secret).
func TestSpells(t *testing.T) {
	many := []string{"flood-test"}
	for i := range 40 { // enough forms that the redactor indexes them
		many = append(many, fmt.Sprintf("other-secret-%02d", i))
	}
	for _, secrets := range [][]string{{"flood-test"}, many} {
		r := mustNew(t, &redact.Options{Secrets: secrets})
		for _, c := range []struct {
			name string
			want bool
		}{
			{"f__flood", false},
			{"f__flood-tes", false},
			{"flood", false},
			{"f__get", false},
			{"f__flood-test", true},
			{"flood-test_x", true},
			{"a_flood%2Dtest", true},
			{`a_flood\u002dtest`, true},
		} {
			if got := r.Spells(c.name); got != c.want {
				t.Errorf("%d secrets: Spells(%q) = %v, want %v", len(secrets), c.name, got, c.want)
			}
		}
		if m := string(r.Values([]byte("f__flood"))); m == "f__flood" {
			t.Errorf("Values no longer masks a text's cut end: %q", m)
		}
	}
}
