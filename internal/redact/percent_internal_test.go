package redact

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestPercentEncodedSecret: a registered value in a URL is percent-encoded
// by whoever made the URL, and a token with '/', '+' or '=' (base64: an
// AWS secret key, a signature) then looks nothing like itself. Each was
// shown as it came.
func TestPercentEncodedSecret(t *testing.T) {
	secret := "wJalrXUtnFEMI/K7MDENG/bPxRfi+CYEXAMPLE=KEY pw!(x)"
	r, err := New(&Options{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	js := strings.NewReplacer("%21", "!", "%28", "(", "%29", ")", "+", "%20") // encodeURIComponent
	py := strings.NewReplacer("%2F", "/", "+", "%20")                         // Python's quote
	forms := []string{
		url.QueryEscape(secret),
		url.PathEscape(secret),
		js.Replace(url.QueryEscape(secret)),
		py.Replace(url.QueryEscape(secret)),
		regexp.MustCompile("%[0-9A-F]{2}").ReplaceAllStringFunc(url.QueryEscape(secret), strings.ToLower), // lower case hex
	}
	for _, f := range forms {
		for _, in := range []string{
			"GET https://api.example/v1/x?q=1&sig=" + f + "&b=2",
			"https://api.example/" + f + "/x",
			`{"next":"https://api.example/cb?s=` + f + `"}`,
		} {
			if out := r.RedactString(in); strings.Contains(out, f) || !strings.Contains(out, Mask) {
				t.Errorf("%s\n  -> %s", in, out)
			}
		}
	}
	// A value with nothing to escape has no percent-encoded forms.
	plain, _ := New(&Options{Secrets: []string{"sk-live-0123456789"}})
	for _, f := range plain.secrets.Load().secs[0].forms {
		if strings.IndexByte(string(f), '%') >= 0 {
			t.Errorf("forms of a value with nothing to escape: %q", plain.secrets.Load().secs[0].forms)
		}
	}
}
