package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestCLIRefusesKeyInTheClear: a command does not send its key to a plain
// http:// gateway that is not loopback, as the configuration refuses a
// model's key: it says so, naming the opt-in, and the gateway hears
// nothing. With --allow-plain-http or $REACH_ALLOW_PLAIN_HTTP the key
// goes; so does a command with no key, and one to a loopback gateway
// (any case of localhost) or an https:// one. Before, the key went in the
// clear to any address --api named.
func TestCLIRefusesKeyInTheClear(t *testing.T) {
	var mu sync.Mutex
	var heard []string // the Authorization of each request the gateways heard
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		heard = append(heard, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"requests":[]}`)
	})
	took := func() []string {
		mu.Lock()
		defer mu.Unlock()
		h := heard
		heard = nil
		return h
	}
	const key = "rk_cleartext_7731aa"
	list := func(api string, extra ...string) error {
		return run(context.Background(), append([]string{"requests", "list", "--api", api}, extra...), io.Discard, io.Discard)
	}

	local := httptest.NewServer(handler)
	defer local.Close()
	_, port, _ := net.SplitHostPort(local.Listener.Addr().String())
	for _, api := range []string{local.URL, "http://LOCALHOST:" + port, "http://localhost:" + port} {
		if err := list(api, "--key", key); err != nil {
			t.Errorf("%s, a loopback gateway: %v", api, err)
		}
		if h := took(); len(h) != 1 || h[0] != "Bearer "+key {
			t.Errorf("%s, a loopback gateway: heard %q, want the key once", api, h)
		}
	}
	if err := (&apiClient{base: "https://192.0.2.10:7400", key: key}).keyInTheClear(); err != nil {
		t.Errorf("an https gateway off loopback: %v, want the key to go", err)
	}

	ip := offLoopbackIP(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("listening on %s, an address off loopback: %v", ip, err)
	}
	far := httptest.NewUnstartedServer(handler)
	far.Listener.Close()
	far.Listener = l
	far.Start()
	defer far.Close()

	err = list(far.URL, "--key", key)
	if err == nil || !strings.Contains(err.Error(), "in the clear") || !strings.Contains(err.Error(), "--allow-plain-http") ||
		!strings.Contains(err.Error(), "REACH_ALLOW_PLAIN_HTTP") || strings.Contains(err.Error(), key) {
		t.Errorf("a key to %s: %v, want a refusal naming --allow-plain-http and $REACH_ALLOW_PLAIN_HTTP, without the key", far.URL, err)
	}
	t.Setenv("REACH_API_KEY", key)
	if err := list(far.URL); err == nil || !strings.Contains(err.Error(), "--allow-plain-http") {
		t.Errorf("a key from $REACH_API_KEY to %s: %v, want a refusal", far.URL, err)
	}
	if h := took(); len(h) != 0 {
		t.Fatalf("the gateway off loopback heard %q, want nothing", h)
	}
	if err := list(far.URL, "--allow-plain-http"); err != nil {
		t.Errorf("with --allow-plain-http: %v", err)
	}
	t.Setenv("REACH_ALLOW_PLAIN_HTTP", "1")
	if err := list(far.URL); err != nil {
		t.Errorf("with REACH_ALLOW_PLAIN_HTTP=1: %v", err)
	}
	t.Setenv("REACH_ALLOW_PLAIN_HTTP", "")
	t.Setenv("REACH_API_KEY", "")
	if err := list(far.URL); err != nil {
		t.Errorf("no key: %v", err)
	}
	if h := took(); len(h) != 3 || h[0] != "Bearer "+key || h[1] != "Bearer "+key || h[2] != "" {
		t.Errorf("the gateway off loopback heard %q, want the key twice (opted in), then no key", h)
	}
}

// offLoopbackIP returns an address of this machine that is not loopback,
// or skips the test.
func offLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("reading this machine's addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no IPv4 address off loopback")
	return ""
}
