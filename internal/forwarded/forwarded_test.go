package forwarded

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPS: a request is https when it came over TLS or the proxy nearest
// the client says so, in the first entry of X-Forwarded-Proto (which wins
// over Forwarded) or of Forwarded, in any case and quoted or not; a later
// proxy's entry, another parameter's value or a proto of http is not.
func TestHTTPS(t *testing.T) {
	for _, tc := range []struct {
		xfp, fwd string
		want     bool
	}{
		{"", "", false},
		{"https", "", true},
		{"HTTPS", "", true},
		{" https ", "", true},
		{"https, http", "", true},
		{"https,http", "", true},
		{"http, https", "", false},
		{"http", "", false},
		{"httpsx", "", false},
		{"", "for=192.0.2.60;proto=https;by=203.0.113.43", true},
		{"", `for="[2001:db8:cafe::17]:4711";Proto="HTTPS"`, true},
		{"", "proto=https, proto=http", true},
		{"", "proto=http, proto=https", false},
		{"", "for=https", false},
		{"http", "proto=https", false}, // X-Forwarded-Proto wins
		{"https", "proto=http", true},
	} {
		r, _ := http.NewRequest("GET", "http://gw.example.com/", nil)
		if tc.xfp != "" {
			r.Header.Set("X-Forwarded-Proto", tc.xfp)
		}
		if tc.fwd != "" {
			r.Header.Set("Forwarded", tc.fwd)
		}
		if got := HTTPS(r); got != tc.want {
			t.Errorf("X-Forwarded-Proto %q, Forwarded %q: %v, want %v", tc.xfp, tc.fwd, got, tc.want)
		}
	}
	r, _ := http.NewRequest("GET", "https://gw.example.com/", nil)
	r.TLS = &tls.ConnectionState{}
	r.Header.Set("X-Forwarded-Proto", "http")
	if !HTTPS(r) {
		t.Error("a request over TLS: not https")
	}
}

// FuzzForwardedHTTPS: any X-Forwarded-Proto and Forwarded a client or a
// proxy sends is read without a panic, and says https only when the first
// proxy's entry does.
func FuzzForwardedHTTPS(f *testing.F) {
	for _, s := range [][2]string{{"https", ""}, {"https, http", ""}, {"http", ""}, {"", "for=1.2.3.4;proto=https"},
		{"", `for="[::1]:1";Proto="HTTPS", proto=http`}, {"", "proto=http, proto=https"}, {"", ";;=;proto"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, xfp, fwd string) {
		h := http.Header{}
		if xfp != "" {
			h.Set("X-Forwarded-Proto", xfp)
		}
		if fwd != "" {
			h.Set("Forwarded", fwd)
		}
		got := HTTPS(&http.Request{Header: h})
		first := strings.ToLower(h.Get("X-Forwarded-Proto"))
		if first == "" {
			first = strings.ToLower(h.Get("Forwarded"))
		}
		first, _, _ = strings.Cut(first, ",")
		if got && !strings.Contains(first, "https") {
			t.Errorf("X-Forwarded-Proto %q, Forwarded %q: https, but the first entry does not say so", xfp, fwd)
		}
	})
}
