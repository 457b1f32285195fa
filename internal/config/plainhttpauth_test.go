package config

import (
	"strings"
	"testing"
)

// TestPlainHTTPClientKeyWhenAuthSaysNobody: an auth section that turns
// neither keys nor JWTs on (auth: {}, auth: {keys: false}) authenticates
// nobody, as no auth section does, so the model proxy passes a client's
// own Authorization on to the model: a plain http:// base_url of another
// host without api_key is refused as it is without the section.
func TestPlainHTTPClientKeyWhenAuthSaysNobody(t *testing.T) {
	for _, a := range []string{"auth: {}\n", "auth: {keys: false}\n"} {
		_, err := Parse([]byte(a+"model:\n  base_url: http://gpu-box:8000/v1\n"), env(nil))
		if err == nil {
			t.Fatalf("%q: Parse took a client's key to plain http off loopback", a)
		}
		for _, w := range []string{"line 3", "plain http", "allow_plain_http: true", "the key a client sends"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", a, err, w)
			}
		}
	}
}
