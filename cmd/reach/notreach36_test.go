package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPIAddressOfAnotherServer: a command whose --api names a server that
// is not a reach gateway (an upstream's port, another app's) says that what
// answered is no reach gateway and where the address comes from: it said
// "GET /v1/requests: 404 Not Found", and reach health printed the other
// server's HTML page.
func TestAPIAddressOfAnotherServer(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<!DOCTYPE html>\n<html><body><pre>Cannot GET "+r.URL.Path+"</pre></body></html>\n")
	}))
	defer other.Close()
	for _, args := range [][]string{
		{"requests", "list"},
		{"requests", "show", "r1"},
		{"approvals", "list"},
		{"graph", "r1", "--format", "json"},
		{"health"},
		{"health", "--ready"},
	} {
		var out, errOut bytes.Buffer
		err := run(t.Context(), append(args, "--api", other.URL), &out, &errOut)
		name := "reach " + strings.Join(args, " ")
		if err == nil {
			t.Errorf("%s on a server that is not reach: no error", name)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, other.URL) || !strings.Contains(msg, "not a reach gateway") || !strings.Contains(msg, "--api") {
			t.Errorf("%s on a server that is not reach: %q, want it to name %s, say it is not a reach gateway, and how to name one (--api)", name, msg, other.URL)
		}
		if strings.Contains(out.String(), "<html>") {
			t.Errorf("%s printed the other server's page:\n%s", name, out.String())
		}
	}
}

// TestHealthPrintsReachsNotReady: reach health still prints a gateway's own
// answer when it is not ready (JSON, 503), and does not call it another
// server.
func TestHealthPrintsReachsNotReady(t *testing.T) {
	base, _, _ := startServe(t, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"status":"not_ready","reason":"shutting down"}`+"\n")
	}))
	defer notReady.Close()
	var out bytes.Buffer
	if err := run(t.Context(), []string{"health", "--ready", "--api", base}, &out, io.Discard); err != nil || !strings.Contains(out.String(), `"status"`) {
		t.Errorf("reach health --ready on a ready gateway: %v, printed %q", err, out.String())
	}
	out.Reset()
	err := run(t.Context(), []string{"health", "--ready", "--api", notReady.URL}, &out, io.Discard)
	if err == nil || strings.Contains(err.Error(), "not a reach gateway") || !strings.Contains(out.String(), "shutting down") {
		t.Errorf("reach health --ready on a gateway not ready: %v, printed %q; want its answer printed and a 503", err, out.String())
	}
}

// TestRequestsListNegativeLimit: reach requests list --limit -1 is refused
// with what the flag takes, as the API refuses limit=-1, before the gateway
// is asked: it listed every request, as --limit 0 does.
func TestRequestsListNegativeLimit(t *testing.T) {
	asked := false
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = true
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"requests":[]}`)
	}))
	defer gw.Close()
	err := run(t.Context(), []string{"requests", "list", "--limit", "-1", "--api", gw.URL}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--limit -1") || !strings.Contains(err.Error(), "0 for all") || asked {
		t.Errorf("reach requests list --limit -1: %v (gateway asked: %v), want it refused, saying what --limit takes, the gateway not asked", err, asked)
	}
}

// TestGraphIntoAMissingFolder: reach graph -o DIR/g.svg where DIR does not
// exist says that the folder is missing and what to do: it said "open
// DIR/g.svg: no such file or directory", after fetching the graph.
func TestGraphIntoAMissingFolder(t *testing.T) {
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		io.WriteString(w, `<svg xmlns="http://www.w3.org/2000/svg"></svg>`)
	}))
	defer gw.Close()
	dir := filepath.Join(t.TempDir(), "nodir")
	out := filepath.Join(dir, "g.svg")
	err := run(t.Context(), []string{"graph", "r1", "-o", out, "--api", gw.URL}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the folder "+dir+" does not exist") || !strings.Contains(err.Error(), "mkdir -p "+dir) {
		t.Errorf("reach graph -o MISSING/g.svg: %v, want it to say the folder does not exist and how to make it", err)
	}
}
