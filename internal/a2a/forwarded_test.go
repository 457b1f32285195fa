package a2a

import (
	"net/http"
	"strings"
	"testing"
)

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
		got := forwardedHTTPS(h)
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
