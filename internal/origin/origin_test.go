package origin

import (
	"net/url"
	"testing"
)

// TestKeyGoesTo: a key goes with a redirect to its origin (a default port
// written or not, the host in any case) and to the upgrade to https of its
// host; not to another port, scheme or host, a subdomain included, and
// never down from https to http.
func TestKeyGoesTo(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"https://api.example/v1", "https://API.example:443/v2", true},
		{"http://10.0.0.1/v1", "http://10.0.0.1:80/x", true},
		{"http://h:8000/v1", "https://h:8000/v1", true},
		{"http://h/v1", "https://h/v1", true},
		{"http://h/v1", "https://h:8443/v1", false},
		{"https://h/v1", "http://h/v1", false},
		{"https://h:8443/v1", "http://h:8443/v1", false},
		{"https://h/v1", "https://h:444/v1", false},
		{"https://example.com/v1", "https://api.example.com/v1", false},
		{"https://h/v1", "https://h.evil/v1", false},
		{"http://[::1]:80/v1", "http://[::1]/x", true},
	} {
		from, _ := url.Parse(c.from)
		to, _ := url.Parse(c.to)
		if got := KeyGoesTo(from, to); got != c.want {
			t.Errorf("%s -> %s: %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
