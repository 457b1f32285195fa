package audit_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
)

// appendAndScan appends e to a fresh log, checks that the chain verifies,
// and returns the stored record.
func appendAndScan(t *testing.T, e *audit.Event) *store.AuditRecord {
	t.Helper()
	ctx := context.Background()
	st := store.NewMemory()
	l := newLog(t, st, nil)
	if _, err := l.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(ctx, st); err != nil {
		t.Fatal(err)
	}
	recs, err := st.ScanAudit(ctx, 0, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("ScanAudit = %d records, %v", len(recs), err)
	}
	return recs[0]
}

// A tool that returns text returns a JSON string: a quoted value inside it
// is written with escaped quotes (API_TOKEN=\"...\"), and the secret
// behind a secret key must not reach the log.
func TestRedactResultJSONStringWithQuotedValue(t *testing.T) {
	const secret = "sk-live-Zq81mNx"
	for _, result := range []string{
		`"API_TOKEN=\"` + secret + `\"\nDEBUG=1\n"`,
		`"export password=\"` + secret + `\""`,
		`"password: \"` + secret + `\""`,
	} {
		rec := appendAndScan(t, &audit.Event{Request: "r1", Kind: "tool", Name: "read_file", Result: result})
		if bytes.Contains(rec.Data, []byte(secret)) {
			t.Errorf("result %s: the secret is in the stored event: %s", result, rec.Data)
		}
	}
}

// A result (or a model's text, which the log stores as the result) that
// starts like JSON but is not JSON is still text: its "key: value" pairs
// and Bearer tokens are redacted as Text redacts them. So are arguments
// that are not JSON.
func TestRedactTextThatLooksLikeJSON(t *testing.T) {
	const secret = "hunter2-Xy9"
	for _, e := range []*audit.Event{
		{Result: "[step 1] logging in with password: " + secret},
		{Result: "[login] Authorization: Bearer " + secret},
		{Result: "{login failed} token: " + secret},
		{Result: "[upstream] sent Bearer " + secret},
		{Args: []byte(`{'password': '` + secret + `'}`)},
		{Args: []byte(`{password: "` + secret + `"}`)},
	} {
		e.Request, e.Kind, e.Name = "r1", "tool", "login"
		rec := appendAndScan(t, e)
		if bytes.Contains(rec.Data, []byte(secret)) {
			t.Errorf("result %q, args %s: the secret is in the stored event: %s", e.Result, e.Args, rec.Data)
		}
	}
}

// Text often holds a JSON document (an upstream's error body in a
// message): a secret-named member inside a JSON string there is written
// with escaped quotes (\"password\": \"...\") or after an escape such as
// \n, and must not reach the log either.
func TestRedactTextHoldingJSONString(t *testing.T) {
	const secret = "Zq81mNxWv"
	for _, msg := range []string{
		`upstream answered 400: {"error":"bad login","detail":"password: \"` + secret + `\""}`,
		`upstream answered 400: {"request":"{\"password\": \"` + secret + `\"}"}`,
		`upstream answered 400: {"request":"{\"token\":\"` + secret + `\"}"}`,
		`upstream answered 400: {"log":"connecting\npwd=` + secret + `\nfailed"}`,
		`upstream answered 400: {"log":"sent\nBearer ` + secret + `\nfailed"}`,
	} {
		for _, e := range []*audit.Event{{Message: msg}, {Why: msg}, {Result: msg}} {
			e.Request, e.Kind, e.Name = "r1", "tool", "login"
			rec := appendAndScan(t, e)
			if bytes.Contains(rec.Data, []byte(secret)) {
				t.Errorf("%s: the secret is in the stored event: %s", msg, rec.Data)
			}
		}
	}
}

// A registered secret is removed "also JSON-escaped, also as the cut end
// of a preview": that holds too when the preview is cut inside the escape
// of one of its characters (a quote written \").
func TestRedactCutInsideEscapedSecret(t *testing.T) {
	const secret = `Zq81"mNxWv`
	ctx := context.Background()
	red := mustRedactor(t, secret)
	st := store.NewMemory()
	l := newLog(t, st, &audit.Options{Redactor: red})
	for _, e := range []*audit.Event{
		{Result: `{"note":"` + `Zq81\`},         // a JSON preview cut after the backslash
		{Message: `upstream said: {"k":"Zq81\`}, // text holding such a preview
		{Result: `"Zq81\`},
	} {
		e.Request, e.Kind = "r1", "tool"
		if _, err := l.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := audit.Verify(ctx, st); err != nil {
		t.Fatal(err)
	}
	recs, err := st.ScanAudit(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if bytes.Contains(r.Data, []byte("Zq81")) {
			t.Errorf("the start of the secret is in the stored event: %s", r.Data)
		}
	}
}
