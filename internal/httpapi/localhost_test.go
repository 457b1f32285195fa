package httpapi

import (
	"net"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/strview"
)

// parseIPLocalHost is localHost as it was, with net.ParseIP: the reading
// localHost keeps.
func parseIPLocalHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

var localHosts = []string{"127.0.0.1:8080", "127.1.2.3", "localhost", "localhost:80", "[::1]:443", "::1", "[::1]",
	"[::ffff:127.0.0.1]:1", "[::1%25lo]:80", "::1%lo", "[fe80::1%eth0]:1", "10.0.0.1:80", "example.com:80",
	"127.0.0.01:80", "0x7f.0.0.1", "LOCALHOST:80", "[::2]:1", "", ":80", "[]:80", "127.0.0.1:"}

// localHost reads a Host as net.ParseIP did: an address with a zone is
// no loopback address.
func TestLocalHost(t *testing.T) {
	for _, h := range localHosts {
		if got, want := localHost(h), parseIPLocalHost(h); got != want {
			t.Errorf("localHost(%q) = %v, net.ParseIP's reading %v", h, got, want)
		}
	}
}

func FuzzLocalHost(f *testing.F) {
	for _, h := range localHosts {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if got, want := localHost(h), parseIPLocalHost(h); got != want {
			t.Errorf("localHost(%q) = %v, net.ParseIP's reading %v", h, got, want)
		}
	})
}

// TestLocalHostAllocations: the fast lane's check of a call's Host, with
// a port as clients send it, allocates nothing: the header is read in
// place (its copy as a string was an allocation a call), and a Host of
// localhost is not parsed as an address first (net.ParseIP's error was
// one more).
func TestLocalHostAllocations(t *testing.T) {
	for _, h := range []string{"127.0.0.1:8080", "[::1]:443", "localhost:80"} {
		b := []byte(h)
		if n := testing.AllocsPerRun(100, func() { localHost(strview.Of(b)) }); n != 0 {
			t.Errorf("localHost(%q): %v allocations, want 0", h, n)
		}
	}
}
