package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestServeRefusesKeysInTheClear: `reach serve` and `reach validate`
// refuse a model whose key would go to a plain http:// host that is not
// loopback, naming the line and the opt-in; with allow_plain_http: true
// the same configuration serves.
func TestServeRefusesKeysInTheClear(t *testing.T) {
	t.Setenv("REACH27_MODEL_KEY", "sk-cleartext-9911")
	const model = "model:\n  name: m\n  base_url: http://192.0.2.10:8000/v1\n  api_key: ${REACH27_MODEL_KEY}\n"
	cfg := writeConfig(t, model)
	for _, args := range [][]string{
		{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir()},
		{"validate", "--config", cfg},
	} {
		cmd := args[0]
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "allow_plain_http: true") {
			t.Fatalf("%s: %v, want a refusal naming line 3 and allow_plain_http", cmd, err)
		}
		if strings.Contains(err.Error()+out.String()+errOut.String(), "sk-cleartext-9911") {
			t.Errorf("%s quotes the key", cmd)
		}
	}
	base, stop, _ := startServe(t, "--config", writeConfig(t, model+"  allow_plain_http: true\n"), "--listen", "127.0.0.1:0", "--data", t.TempDir())
	getJSON(t, "GET", base+"/v1/tools", "")
	if err := stop(); err != nil {
		t.Errorf("serve with allow_plain_http: %v", err)
	}
	if err := run(context.Background(), []string{"validate", "--offline", "--config", writeConfig(t, model+"  allow_plain_http: true\n")}, io.Discard, io.Discard); err != nil {
		t.Errorf("validate with allow_plain_http: %v", err)
	}
}

// TestServeAPIAnswersRunNoScript: an API answer is never a page of the
// gateway's origin. A model endpoint that answers GET models/{id} with
// HTML echoing the id (a default error page) had it passed on as
// text/html, and a browser sent there by another site (a GET: no
// cross-origin check, no credentials when reach authenticates nobody)
// ran its script with the gateway's origin, which may approve, stop and
// read every request. Each API answer, the passed-on one and a graph's
// SVG included, carries a sandboxing Content-Security-Policy and nosniff;
// the UI keeps its own policy.
func TestServeAPIAnswersRunNoScript(t *testing.T) {
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<html><body>No model "+r.URL.Path+"</body></html>")
	}))
	defer model.Close()
	base, stop, _ := startServe(t, "--config", writeConfig(t, "model:\n  base_url: "+model.URL+"/v1\n"), "--listen", "127.0.0.1:0", "--data", t.TempDir())
	defer stop()
	getJSON(t, "POST", base+"/v1/calls", `{"request_id":"r-csp","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"x"}}]}`)
	for _, path := range []string{"/v1/models/%3Cscript%3Ealert(1)%3C%2Fscript%3E", "/v1/requests/r-csp/graph?format=svg", "/v1/requests", "/nothing"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("GET %s (%s): Content-Security-Policy %q, want a sandbox that loads nothing", path, resp.Header.Get("Content-Type"), csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no X-Content-Type-Options: nosniff", path)
		}
	}
	resp, err := http.Get(base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("the UI's Content-Security-Policy is %q, want its own", csp)
	}
}

// TestCLIKeyNotRedirectedElsewhere: the commands' key (--key,
// $REACH_API_KEY) goes to the gateway's origin only. A gateway address
// that redirects (a proxy in front of it, moved) to another port or scheme
// of the same host had net/http send the key there too, to plain http
// included; it is dropped, and a redirect within the origin keeps it.
func TestCLIKeyNotRedirectedElsewhere(t *testing.T) {
	const key = "rk_cli-key-not-elsewhere-77"
	var mu sync.Mutex
	got := map[string]string{}
	listing := func(where string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got[where] = r.Header.Get("Authorization")
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"requests":[]}`)
		}
	}
	other := httptest.NewServer(listing("other port"))
	defer other.Close()
	gw := http.NewServeMux()
	gw.HandleFunc("/v1/requests", func(w http.ResponseWriter, r *http.Request) {
		target := other.URL + r.URL.RequestURI()
		if r.URL.Query().Get("limit") == "7" {
			target = "/moved" + r.URL.RequestURI()
		}
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	})
	gw.HandleFunc("/moved/v1/requests", listing("same origin"))
	gws := httptest.NewServer(gw)
	defer gws.Close()
	for _, c := range []struct{ limit, where, want string }{
		{"5", "other port", ""},
		{"7", "same origin", "Bearer " + key},
	} {
		if err := run(context.Background(), []string{"requests", "list", "--api", gws.URL, "--key", key, "--limit", c.limit}, io.Discard, io.Discard); err != nil {
			t.Fatalf("requests list: %v", err)
		}
		mu.Lock()
		a, ok := got[c.where]
		mu.Unlock()
		if !ok || a != c.want {
			t.Errorf("%s got Authorization %q (asked: %v), want %q", c.where, a, ok, c.want)
		}
	}
}
