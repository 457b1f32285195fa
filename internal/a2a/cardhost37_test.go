package a2a

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"testing"
)

// A Host without a port is the scheme's port (a gateway on :80, or :443
// with TLS, asked at its address without one), and a name listed in
// a2a.hosts with its scheme's port is the name asked without it, and the
// other way round: both were refused 421.
func TestCardHostDefaultPorts(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) { o.Hosts = []string{"reach.example:443", "gw.example"} }, nil, "executor")
	at := func(local string, port int, host string, tlsOn bool) bool {
		r, err := http.NewRequest(http.MethodGet, "http://x/", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Host = host
		if tlsOn {
			r.TLS = &tls.ConnectionState{}
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP(local), Port: port}))
		return h.g.hostAllowed(r)
	}
	for _, c := range []struct {
		local string
		port  int
		host  string
		tls   bool
		want  bool
	}{
		{"10.0.0.5", 80, "10.0.0.5", false, true},
		{"10.0.0.5", 80, "10.0.0.5:80", false, true},
		{"10.0.0.5", 443, "10.0.0.5", true, true},
		{"10.0.0.5", 443, "10.0.0.5", false, false}, // plain HTTP without a port is 80
		{"10.0.0.5", 7400, "10.0.0.5", false, false},
		{"::1", 80, "[::1]", false, true},
		{"127.0.0.1", 80, "localhost", false, true},
		{"10.0.0.5", 7400, "reach.example", true, true},
		{"10.0.0.5", 7400, "reach.example:443", true, true},
		{"10.0.0.5", 7400, "gw.example:80", false, true},
		{"10.0.0.5", 7400, "gw.example:443", true, true},
		{"10.0.0.5", 7400, "gw.example:9", false, false},
		{"10.0.0.5", 7400, "gw.example:80", true, false}, // over TLS, 80 is not the scheme's port
		{"10.0.0.5", 7400, "reach.example", false, false},
		{"10.0.0.5", 7400, "attacker.example", false, false},
	} {
		if got := at(c.local, c.port, c.host, c.tls); got != c.want {
			t.Errorf("Host %q at %s:%d (TLS %v): allowed %v, want %v", c.host, c.local, c.port, c.tls, got, c.want)
		}
	}
}
