package redact

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"strconv"
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
	if short, _ := New(&Options{Secrets: []string{"hunter2"}}); len(short.secrets.Load().secs[0].b64) != 0 {
		t.Errorf("base64 forms of a short value: %q", short.secrets.Load().secs[0].b64)
	}
}

// TestBase64SecretWrapped: base64 wrapped in lines, as MIME writes it (76
// columns, CRLF) and PEM (64, LF; indented, as in a YAML file), holds a
// registered value that a line break may cut: masked wherever the break falls, in text and in a JSON
// string, the rest of the blob kept. The value was shown whenever a break
// fell inside its form.
func TestBase64SecretWrapped(t *testing.T) {
	secret := "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	r, err := New(&Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, wrap := range []struct {
		width int
		eol   string
	}{{76, "\r\n"}, {64, "\n"}, {64, "\n    "}} { // the last a PEM indented in YAML
		for lead := range 60 { // the value at every place of a line
			blob := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", lead) + secret + strings.Repeat("y", 90)))
			var lines []string
			for len(blob) > wrap.width {
				lines, blob = append(lines, blob[:wrap.width]), blob[wrap.width:]
			}
			text := strings.Join(append(lines, blob), wrap.eol)
			for _, in := range []string{"Content-Transfer-Encoding: base64\r\n\r\n" + text + wrap.eol, `{"body":` + strconv.Quote(text) + `}`} {
				out := r.RedactString(in)
				joined := strings.NewReplacer("\r", "", "\n", "", " ", "", `\r`, "", `\n`, "").Replace(out)
				if !strings.Contains(out, Mask) || strings.Contains(joined, base64.StdEncoding.EncodeToString([]byte(secret))[:20]) {
					t.Errorf("width %d, %d bytes before the value: %q", wrap.width, lead, out)
					continue
				}
				if lead >= 8 && !strings.Contains(out, lines[0][:8]) {
					t.Errorf("width %d, %d bytes before the value: the blob's start masked: %q", wrap.width, lead, out)
				}
			}
		}
	}
}

// TestBase64SecretInURL: a registered value in base64 (a credential, a
// blob the value is inside) passed in a URL's query or path is
// percent-encoded there, and the standard alphabet's '+' and '/' then
// look nothing like themselves: masked wherever the value begins in the
// encoded bytes. It was shown whenever its base64 had one of them (a
// password with '?', '~' or '>').
func TestBase64SecretInURL(t *testing.T) {
	secret := "Tr0ub4dor&3-horse?battery~staple>"
	r, err := New(&Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	lower := regexp.MustCompile("%[0-9A-F]{2}")
	for _, plain := range []string{secret, "u:" + secret, "user:" + secret, "{\"k\":\"" + secret + "\"}~~~", ">>" + secret + "??"} {
		b := base64.StdEncoding.EncodeToString([]byte(plain))
		for _, f := range []string{url.QueryEscape(b), url.PathEscape(b), lower.ReplaceAllStringFunc(url.QueryEscape(b), strings.ToLower)} {
			for _, in := range []string{"GET https://api.example/cb?state=" + f + "&b=2", "https://api.example/blob/" + f + "/x"} {
				out := r.RedactString(in)
				if !strings.Contains(out, Mask) {
					t.Errorf("%q in base64: %s", plain, out)
				}
			}
		}
	}
}
