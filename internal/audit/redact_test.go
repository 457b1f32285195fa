package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
)

func mustRedactor(t testing.TB, secrets ...string) *audit.Redactor {
	t.Helper()
	r, err := audit.NewRedactor(&audit.RedactorOptions{Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRedactJSON(t *testing.T) {
	r := mustRedactor(t, "sk-live-0123456789", "98765432")
	tests := []struct{ in, want string }{
		{`{"query":"x","limit":3}`, `{"query":"x","limit":3}`},
		{`{"password":"hunter2","user":"bob"}`, `{"password":"[REDACTED]","user":"bob"}`},
		{`{"API_KEY": 12345}`, `{"API_KEY": "[REDACTED]"}`},
		{`{"x-api-key":"abc","X.Auth.Token":"t"}`, `{"x-api-key":"[REDACTED]","X.Auth.Token":"[REDACTED]"}`},
		{`{"Authorization":"Bearer abc"}`, `{"Authorization":"[REDACTED]"}`},
		{`{"client_secret":{"a":1,"b":[1,"x",{"c":null}]},"ok":true}`, `{"client_secret":"[REDACTED]","ok":true}`},
		{`{"auth":{"user":"u","pass":"p"}}`, `{"auth":"[REDACTED]"}`},
		{`{"author":"Bob","authority":"x"}`, `{"author":"Bob","authority":"x"}`},
		{`{"max_tokens":100,"access_token":"x","tokens":"abc"}`, `{"max_tokens":100,"access_token":"[REDACTED]","tokens":"[REDACTED]"}`},
		{`[{"session_id":"s1"},{"ok":1}]`, `[{"session_id":"[REDACTED]"},{"ok":1}]`},
		{`{"pass\u0077ord":"x"}`, `{"pass\u0077ord":"[REDACTED]"}`},
		{`{"cmd":"curl -H 'Authorization: Bearer abc123' x"}`, `{"cmd":"curl -H 'Authorization: [REDACTED]' x"}`},
		{`{"note":"password=hunter2&user=bob"}`, `{"note":"password=[REDACTED]&user=bob"}`},
		{`{"h":"Bearer eyJhbGciOi.x.y"}`, `{"h":"Bearer [REDACTED]"}`},
		// Registered values, wherever they are.
		{`{"key":"sk-live-0123456789"}`, `{"key":"[REDACTED]"}`},
		{`{"url":"https://api/x?k=sk-live-0123456789&q=1"}`, `{"url":"https://api/x?k=[REDACTED]&q=1"}`},
		{`{"sk-live-0123456789":1}`, `{"[REDACTED]":1}`},
		{`{"k":"sk-live-\u00301234\u0035\u0036789"}`, `{"k":"[REDACTED]"}`},
		{`{"pin_code_x":1,"n":98765432}`, `{"pin_code_x":1,"n":"[REDACTED]"}`},
		// Cut short: a secret member's value is masked all the same.
		{`{"password":"hun`, `{"password":"[REDACTED]"`},
		{`{"a":1,"token":{"x":[1,2`, `{"a":1,"token":"[REDACTED]"`},
		{`not json password=x`, `not json password=[REDACTED]`},
	}
	for _, tt := range tests {
		got := string(r.JSON([]byte(tt.in)))
		if got != tt.want {
			t.Errorf("JSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
		}
		if json.Valid([]byte(tt.in)) && !json.Valid([]byte(got)) {
			t.Errorf("JSON(%s) = %s: not JSON any more", tt.in, got)
		}
	}
	in := []byte(`{"query":"x"}`)
	if out := r.JSON(in); &out[0] != &in[0] {
		t.Error("JSON copied an input that needed no change")
	}
}

func TestRedactText(t *testing.T) {
	r := mustRedactor(t, "sk-live-0123456789", `p"q\r`)
	tests := []struct{ in, want string }{
		{"nothing to hide: 3 results", "nothing to hide: 3 results"},
		{"password: hunter2, user: bob", "password: [REDACTED], user: bob"},
		{`login failed for {"user":"bob","password":"hunter2"}`, `login failed for {"user":"bob","password":"[REDACTED]"}`},
		{"Authorization: Bearer abc.def", "Authorization: [REDACTED]"},
		{"use Bearer abc.def next time", "use Bearer [REDACTED] next time"},
		{"the author: Bob", "the author: Bob"},
		{"max_tokens=100 tokens=20 api_key=zzz", "max_tokens=100 tokens=20 api_key=[REDACTED]"},
		{"x == y", "x == y"},
		{"key sk-live-0123456789 rejected", "key [REDACTED] rejected"},
		{`{"k":"p\"q\\r"}`, `{"k":"[REDACTED]"}`},    // the JSON-escaped form
		{"result: sk-live-01", "result: [REDACTED]"}, // a preview cut inside a secret
	}
	for _, tt := range tests {
		if got := r.Text(tt.in); got != tt.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	if err := r.AddSecret("abc"); err == nil {
		t.Error("AddSecret accepted a 3-byte secret")
	}
}

func FuzzRedactJSON(f *testing.F) {
	const secret = "s3cr3tVALUE42"
	for _, s := range []string{
		`{"a":"s3cr3tVALUE42"}`, `["x s3cr3tVALUE42 y",{"s3cr3tVALUE42":1}]`, `{"password":"p"}`,
		`{"k":"s3cr\u0033tVALUE42"}`, `s3cr3tVALUE42`, `{"a":[1,2,{"token":"`, `{"a":"\`,
		`{"x":1e5,"y":-0.5,"z":[true,false,null]}`, `"Bearer s3cr3tVALUE42"`,
	} {
		f.Add([]byte(s))
	}
	r := mustRedactor(f, secret)
	f.Fuzz(func(t *testing.T, in []byte) {
		out := r.JSON(in)
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("JSON(%q) = %q still holds the secret", in, out)
		}
		if json.Valid(in) && !json.Valid(out) {
			t.Fatalf("JSON(%q) = %q is not JSON", in, out)
		}
		if txt := r.Text(string(in)); strings.Contains(txt, secret) {
			t.Fatalf("Text(%q) = %q still holds the secret", in, txt)
		}
	})
}

// TestRedactStoredRows appends events that carry registered secrets and
// secret-named fields everywhere they can be, then scans the database's
// bytes and every decoded field: none may be there.
func TestRedactStoredRows(t *testing.T) {
	secrets := []string{"sk-live-7Hq2x9Zr", "ghp_Q8wLm2Vb7Ks", `tok"with\quote`}
	secretKeys := []string{"password", "Password", "API_KEY", "x-api-key", "client_secret", "access_token",
		"Authorization", "refresh-token", "db.passwd", "Cookie", "private_key", "credentials", "sessionId"}
	rng := rand.New(rand.NewPCG(7, 7))
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.New(ctx, st, &audit.Options{Redactor: mustRedactor(t, secrets...)})
	if err != nil {
		t.Fatal(err)
	}
	var markers, keeps []string
	mark := func() string {
		m := fmt.Sprintf("mark%06dz", len(markers))
		markers = append(markers, m)
		return m
	}
	sec := func() string { return secrets[rng.IntN(len(secrets))] }
	// value builds a random JSON value holding secrets and marked
	// secret-named fields at random depths.
	var value func(depth int) any
	value = func(depth int) any {
		switch k := rng.IntN(6); {
		case depth > 3 || k == 0:
			return "v " + sec() + " end"
		case k == 1:
			return []any{value(depth + 1), sec(), 7}
		case k == 2:
			return map[string]any{secretKeys[rng.IntN(len(secretKeys))]: mark(), "n": value(depth + 1)}
		case k == 3:
			return map[string]any{secretKeys[rng.IntN(len(secretKeys))]: map[string]any{"deep": mark(), "more": []any{mark()}}}
		case k == 4:
			return fmt.Sprintf("%s=%s; q=1", secretKeys[rng.IntN(len(secretKeys))], mark())
		default:
			return map[string]any{sec(): "as a key"}
		}
	}
	for i := range 300 {
		keep := fmt.Sprintf("keep%04d", i)
		keeps = append(keeps, keep)
		args, _ := json.Marshal(map[string]any{"query": keep, "x": value(0), "y": value(0)})
		res, _ := json.Marshal(map[string]any{"result": value(0)})
		msg := fmt.Sprintf("upstream said %s: %s=%s", sec(), secretKeys[rng.IntN(len(secretKeys))], mark())
		if i%2 == 0 {
			_, err := log.Append(ctx, &audit.Event{Request: "r", Kind: "tool", Name: "call " + sec(),
				Principal: "p " + sec(), Args: args, Result: string(res), Message: msg,
				Reason: "Bearer " + mark(), Budget: []byte(`{"note":"` + strings.ReplaceAll(sec(), `"`, `\"`) + `"}`)})
			if err != nil {
				t.Fatal(err)
			}
		} else {
			log.Record(ctx, &reach.Event{Time: time.Now(), Request: "r", Name: "call " + sec(), Args: args,
				Summary: string(res), Error: &reach.Error{Code: "denied", Message: msg}})
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.Show(ctx, st, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 300 {
		t.Fatalf("%d events stored, want 300 (dropped %d)", len(evs), log.Dropped())
	}
	st.Close()

	// Every byte of the database folder.
	var raw []byte
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	// Every decoded string of every event.
	var decoded strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			decoded.WriteString(v + "\n")
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for k, x := range v {
				decoded.WriteString(k + "\n")
				walk(x)
			}
		}
	}
	for _, e := range evs {
		for _, s := range []string{e.Request, e.Name, e.Principal, e.Message, e.Result, e.Reason, e.Code} {
			decoded.WriteString(s + "\n")
		}
		for _, j := range [][]byte{e.Args, e.Budget} {
			var v any
			if len(j) > 0 {
				if err := json.Unmarshal(j, &v); err != nil {
					t.Fatalf("stored JSON %s: %v", j, err)
				}
			}
			walk(v)
		}
	}
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the database file holds the secret %q", s)
		}
		if strings.Contains(decoded.String(), s) {
			t.Errorf("a stored event holds the secret %q", s)
		}
	}
	leaked := 0
	for _, m := range markers {
		if bytes.Contains(raw, []byte(m)) || strings.Contains(decoded.String(), m) {
			leaked++
		}
	}
	if leaked > 0 {
		t.Errorf("%d of %d values of secret-named fields are stored", leaked, len(markers))
	}
	for _, k := range keeps {
		if !bytes.Contains(raw, []byte(k)) {
			t.Fatalf("the harmless value %s was not stored: the redactor removes too much", k)
		}
	}
	t.Logf("%d events, %d secret-named values, %d registered secrets: nothing stored", len(evs), len(markers), len(secrets))
}
