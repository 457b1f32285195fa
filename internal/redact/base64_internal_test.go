package redact

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestBase64Secret: a registered value in base64, alone or inside more
// bytes (user:password, a header block), at any of the three places it may
// begin in them, is masked; a model decodes base64 as easily as it reads.
// Each was shown as it came.
func TestBase64Secret(t *testing.T) {
	secret := "sk-upstream-SECRETVALUE-1234567890"
	r, err := New(&Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, plain := range []string{secret, "u:" + secret, "user:" + secret, "x-key: " + secret + "\r\nhost: a.example"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			b := enc.EncodeToString([]byte(plain))
			out := r.RedactString(`{"echo":"` + b + `"}`)
			dec, _ := enc.DecodeString(strings.TrimSuffix(strings.TrimPrefix(out, `{"echo":"`), `"}`))
			if !strings.Contains(out, Mask) || strings.Contains(string(dec), "SECRETVALUE") {
				t.Errorf("%q in base64: %s", plain, out)
			}
		}
	}
	// A short value is not looked for in base64: its few characters could
	// be anyone's.
	if short, _ := New(&Options{Secrets: []string{"hunter2"}}); len(short.secrets.Load().secs[0].forms) != 1 {
		t.Errorf("forms of a short value: %q", short.secrets.Load().secs[0].forms)
	}
}
