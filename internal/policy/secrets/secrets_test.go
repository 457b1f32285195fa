package secrets

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const token = "ghp_S3cr3tT0kenValue"

func newRedactor(t testing.TB) *Redactor {
	r := New(&Options{Keys: []string{"x-internal"}})
	if err := r.Add(token, "hunter22", "12345678"); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRedactJSON(t *testing.T) {
	r := newRedactor(t)
	tests := []struct{ name, in, want string }{
		{"by name", `{"password":"pw","user":"bob"}`, `{"password":"[redacted]","user":"bob"}`},
		{"names ignore case and separators", `{"API-Key":1,"Authorization":"Basic x","Set-Cookie":["a"],"github_token":"t","clientSecret":{"a":1},"X_Internal":"i"}`,
			`{"API-Key":"[redacted]","Authorization":"[redacted]","Set-Cookie":"[redacted]","github_token":"[redacted]","clientSecret":"[redacted]","X_Internal":"[redacted]"}`},
		{"not secrets", `{"max_tokens":100,"token_count":3,"tokens":[1],"keyword":"k","author":"a"}`, `{"max_tokens":100,"token_count":3,"tokens":[1],"keyword":"k","author":"a"}`},
		{"nested", `{"a":[{"b":{"refresh_token":"r"}},"x"]}`, `{"a":[{"b":{"refresh_token":"[redacted]"}},"x"]}`},
		{"registered value", `{"note":"use ` + token + ` to log in"}`, `{"note":"use [redacted] to log in"}`},
		{"escaped value", `{"note":"` + strings.Replace(token, "S", `\u0053`, 1) + `"}`, `{"note":"[redacted]"}`},
		{"value as a number", `{"code":12345678}`, `{"code":"[redacted]"}`},
		{"value in a name", `{"` + token + `":1}`, `{"[redacted]":1}`},
		{"spacing kept valid", "{ \"a\" : [ 1 , \"hunter22\" ] ,\n \"pwd\" : null }", `{"a":[1,"[redacted]"],"pwd":"[redacted]"}`},
		{"top-level string", `"hunter22"`, `"[redacted]"`},
		{"a pair in a text value", `{"content":[{"type":"text","text":"connect with password=pw12345 now"}]}`,
			`{"content":[{"type":"text","text":"connect with password=[redacted] now"}]}`},
		{"a bearer token in a text value", `{"text":"Authorization: Bearer abcdefghijklmnop"}`, `{"text":"Authorization: Bearer [redacted]"}`},
		{"prose in a text value", `{"text":"Our basic subscription costs $10; each call spends one token whenever it runs. Session: Introduction to the product"}`,
			`{"text":"Our basic subscription costs $10; each call spends one token whenever it runs. Session: Introduction to the product"}`},
		{"JSON in a text value", `{"text":"{\"password\":\"pw12345\"}"}`, `{"text":"{\"password\":\"[redacted]\"}"}`},
		{"empty", `{}`, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Redact([]byte(tt.in))
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("output is not JSON: %s", got)
			}
			if s := r.RedactString(tt.in); s != tt.want {
				t.Errorf("RedactString: got %s", s)
			}
		})
	}
}

func TestRedactText(t *testing.T) {
	r := newRedactor(t)
	tests := []struct{ name, in, want string }{
		{"registered value", "login failed for " + token, "login failed for [redacted]"},
		{"query", "GET /x?user=bob&password=pw1&api_key=zz", "GET /x?user=bob&password=[redacted]&api_key=[redacted]"},
		{"header", "Authorization: Bearer abcdefghijkl", "Authorization: [redacted] [redacted]"},
		{"bearer alone", "sent bearer abcdefghijkl.mn", "sent bearer [redacted]"},
		{"basic credentials alone", "upstream rejected Basic YWxhZGRpbjpvcGVuc2VzYW1l", "upstream rejected Basic [redacted]"},
		{"token scheme", "Authorization: token abcdefghijklmnop", "Authorization: [redacted] [redacted]"},
		{"key in a URL", "GET https://api.example.com/v1?api_key=abc123&user=bob", "GET https://api.example.com/v1?api_key=[redacted]&user=bob"},
		{"token in text", "sent token abcdefghijklmnop to the server", "sent token [redacted] to the server"},
		{"partial JSON", `{"user":"bob","token":"abc","more":`, `{"user":"bob","token":"[redacted]","more":`},
		{"nothing to hide", "the order A1 was refunded", "the order A1 was refunded"},
		{"harmless key word", "the key: idea", "the key: idea"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.RedactString(tt.in); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if got := string(r.Redact([]byte(tt.in))); got != tt.want {
				t.Errorf("Redact: got %s", got)
			}
		})
	}
}

func TestNothingToRedactIsNotCopied(t *testing.T) {
	r := newRedactor(t)
	in := []byte(`{"order":"A1","amount":20}`)
	if out := r.Redact(in); &out[0] != &in[0] {
		t.Error("the input was copied")
	}
}

func TestAdd(t *testing.T) {
	r := New(nil)
	if err := r.Add("abc", "", "long enough"); err == nil || strings.Contains(err.Error(), "abc") {
		t.Errorf("short value: %v", err)
	}
	if r.Len() != 1 {
		t.Errorf("%d values", r.Len())
	}
	t.Setenv("REACH_TEST_SECRET", "from-the-env")
	r.AddEnv("REACH_TEST_SECRET", "REACH_TEST_UNSET")
	if got := r.RedactString("x from-the-env long enough"); got != "x [redacted] [redacted]" {
		t.Errorf("got %q", got)
	}
	// Longest first: a secret containing another is masked whole.
	r.Add("long enough and more")
	if got := r.RedactString("long enough and more"); got != "[redacted]" {
		t.Errorf("got %q", got)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "secrets.env")
	os.WriteFile(env, []byte("# upstream credentials\nGITHUB_TOKEN=ghp_x\nexport DB_PASSWORD=\"p w\\n\"\n\nQ='single'\n"), 0o600)
	got, err := ReadFile(env)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"GITHUB_TOKEN": "ghp_x", "DB_PASSWORD": "p w\n", "Q": "single"}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	js := filepath.Join(dir, "secrets.json")
	os.WriteFile(js, []byte(`{"A":"b"}`), 0o600)
	if got, err := ReadFile(js); err != nil || got["A"] != "b" {
		t.Errorf("json: %v %v", got, err)
	}
	os.WriteFile(env, []byte("no equals sign\n"), 0o600)
	if _, err := ReadFile(env); err == nil {
		t.Error("a malformed line was accepted")
	}
}

func TestSensitiveKey(t *testing.T) {
	for _, k := range []string{"password", "Password", "db_password", "passwd", "pwd", "secret", "client_secret", "api_key", "apiKey",
		"X-API-Key", "authorization", "Proxy-Authorization", "cookie", "Set-Cookie", "access_token", "refreshToken", "id_token",
		"private_key", "credentials", "session_id", "passphrase", "x-reach-key"} {
		if !SensitiveKey(k) {
			t.Errorf("%s is not sensitive", k)
		}
	}
	for _, k := range []string{"max_tokens", "token_count", "tokens", "key", "keyword", "author", "username", "description", "pinned"} {
		if SensitiveKey(k) {
			t.Errorf("%s is sensitive", k)
		}
	}
}

// FuzzRedact: valid JSON stays valid, no decoded string holds the secret,
// and sensitive members hold only the mask; other text never holds it.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{`{"password":"x"}`, `{"a":"` + token + `"}`, `["\u0067hp_S3cr3tT0kenValue"]`, "token=" + token,
		`{"a":{"api_key":[1,2]}}`, `not json ` + token, `{"k":12345678}`} {
		f.Add([]byte(s))
	}
	r := newRedactor(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		out := r.Redact(b)
		if !json.Valid(b) {
			if strings.Contains(string(out), token) && !strings.Contains(string(b), "\\") {
				t.Fatalf("secret left in text: %q -> %q", b, out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("JSON %q became %q", b, out)
		}
		var v any
		json.Unmarshal(out, &v)
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				if strings.Contains(v, token) || strings.Contains(v, "hunter22") {
					t.Fatalf("secret left: %q -> %q", b, out)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			case map[string]any:
				for k, x := range v {
					walk(k)
					if SensitiveKey(k) && x != "[redacted]" {
						t.Fatalf("member %s kept %v: %q -> %q", k, x, b, out)
					}
					walk(x)
				}
			}
		}
		walk(v)
	})
}

// TestRedactValues: only the registered values are masked, also when a
// JSON string escapes them; sensitive member names and text rules are left.
func TestRedactValues(t *testing.T) {
	r := New(nil)
	if err := r.Add("sk/live-42abc"); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"token":"Hello","text":"key is sk\/live-42abc"}`: `{"token":"Hello","text":"key is [redacted]"}`,
		`{"password":"x","n":1}`:                           `{"password":"x","n":1}`,
		`plain sk/live-42abc and password=hunter2`:         `plain [redacted] and password=hunter2`,
		`{"a":"nothing here"}`:                             `{"a":"nothing here"}`,
	} {
		if got := string(r.RedactValues([]byte(in))); got != want {
			t.Errorf("RedactValues(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestStream: a secret split across the pieces of a streamed text is
// masked; text that only looks like a secret's start is passed on whole,
// a piece later; the start of a secret that never comes whole is masked
// when it is long enough to give part of it away.
func TestStream(t *testing.T) {
	r := New(nil)
	if err := r.Add("sk-live-0123456789"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pieces []string
		want   string
	}{
		{[]string{"the key is sk-li", "ve-0123", "456789, use it"}, "the key is [redacted], use it"},
		{[]string{"s", "k-live-0123456789"}, "[redacted]"},
		{[]string{"ask", "-me later: sk", "y"}, "ask-me later: sky"},
		{[]string{"whole sk-live-0123456789 in one"}, "whole [redacted] in one"},
		{[]string{"cut at the end: sk-live-01"}, "cut at the end: [redacted]"},
		{[]string{"short start: sk"}, "short start: sk"},
	}
	for _, tt := range tests {
		s := r.Stream()
		var out strings.Builder
		if whole := r.RedactString(strings.Join(tt.pieces, "")); !strings.HasSuffix(tt.want, "[redacted]") && whole != tt.want {
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

// TestStreamOverlappingSecrets: with a secret that begins another, a
// stream masks as masking the whole text does, wherever it is cut.
func TestStreamOverlappingSecrets(t *testing.T) {
	r := New(nil)
	if err := r.Add("abcd1234", "abcd1234efgh5678", "zz-key-99"); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"x abcd1234efgh5678 y", "x abcd1234 y", "a zz-key-99abcd1234efgh5678!", "abcd1234abcd1234efgh"} {
		want := r.RedactString(text)
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
// half of it is masked.
func TestStreamFlushKeepsWords(t *testing.T) {
	r := New(nil)
	if err := r.Add("test-api-key-123"); err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]string{
		"upgrade to the latest": "upgrade to the latest",
		"the key: test-api-k":   "the key: [redacted]",
	} {
		s := r.Stream()
		if got := s.Next(text) + s.Flush(); got != want {
			t.Errorf("%q streamed as %q, want %q", text, got, want)
		}
	}
}
