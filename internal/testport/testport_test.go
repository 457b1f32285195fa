package testport

import (
	"net"
	"strconv"
	"testing"
)

// The ports handed out are free (a listener binds each), differ from one
// another, and, where the kernel's ephemeral range can be read, lie below
// it: no listener on port 0 nor outbound connection can take one between
// Free and the bind.
func TestFree(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 200 {
		p, err := Free()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		if low > 2048 && (p >= low || p < 1024) {
			t.Fatalf("port %d is not below the ephemeral range (from %d)", p, low)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d handed out as free: %v", p, err)
		}
		ln.Close()
	}
	if a, err := Addr(); err != nil || seen[mustPort(t, a)] {
		t.Fatalf("Addr = %q, %v; want a loopback address not handed out before", a, err)
	}
}

func mustPort(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
