package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// browserDeps returns chromium, node and playwright-core's folder, or skips
// the test (fails it under REACH_CI) saying what is missing.
func browserDeps(t *testing.T) (chromium, node, pw string) {
	t.Helper()
	dir := os.Getenv("REACH_BROWSER_CACHE")
	if dir == "" {
		root, _ := filepath.Abs("../..")
		dir = filepath.Join(root, ".cache", "browser")
	}
	pw = filepath.Join(dir, "node_modules", "playwright-core")
	skip := t.Skip
	if os.Getenv("REACH_CI") != "" {
		skip = t.Fatal
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		skip("chromium not installed (scripts/browser-deps.sh installs it)")
	}
	node, err = exec.LookPath("node")
	if _, statErr := os.Stat(pw); err != nil || statErr != nil {
		skip("node or playwright-core missing (scripts/browser-deps.sh installs them)")
	}
	return chromium, node, pw
}

// TestBrowserTwoInstances: two gateways' UIs on 127.0.0.1, on two ports,
// in one browser (one cookie jar, as a user with a tab on each): signing
// in to the second keeps the first signed in, each as its own user. A
// browser sends a host's cookies to every port of it: both set one
// reach_session, and signing in to B signed the browser out of A (A then
// sent B's session, unknown to it, and was sent to its login page).
func TestBrowserTwoInstances(t *testing.T) {
	chromium, node, pw := browserDeps(t)
	serve := func(key, principal string) *httptest.Server {
		login := &Login{
			Header: func(*http.Request) (*auth.Identity, error) { return nil, auth.ErrBadKey },
			Credential: func(_ context.Context, c string) (*auth.Identity, time.Time, error) {
				if c != key {
					return nil, time.Time{}, auth.ErrBadKey
				}
				return &auth.Identity{Principal: principal, Roles: []string{"operator"}, Method: "api_key"}, time.Time{}, nil
			},
		}
		srv := httptest.NewServer(New(Options{Runtime: reach.New(nil), Login: login,
			Actor: func(r *http.Request) Actor {
				id, _ := auth.IdentityFrom(r.Context())
				return Actor{Principal: id.Principal}
			}}))
		t.Cleanup(srv.Close)
		return srv
	}
	a, b := serve("rk_key_a", "alice"), serve("rk_key_b", "bob")
	cmd := exec.CommandContext(t.Context(), node, "testdata/twoinstances.js")
	cmd.Env = append(os.Environ(), "A="+a.URL, "B="+b.URL, "KEY_A=rk_key_a", "KEY_B=rk_key_b", "CHROMIUM="+chromium, "PW="+pw)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser script: %v\n%s", err, out)
	}
	var saw struct {
		Error                              string
		SignedInA, SignedInB, ThenA, ThenB string
		Cookies                            []string
	}
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("browser output %q: %v", out, err)
	}
	if saw.Error != "" {
		t.Fatalf("browser: %s", saw.Error)
	}
	if saw.SignedInA != "alice" || saw.SignedInB != "bob" {
		t.Fatalf("signed in to A as %q, to B as %q, want alice and bob", saw.SignedInA, saw.SignedInB)
	}
	if saw.ThenA != "alice" || saw.ThenB != "bob" {
		t.Errorf("after signing in to both, A shows %q and B %q, want alice and bob (cookies %v)", saw.ThenA, saw.ThenB, saw.Cookies)
	}
	for _, srv := range []*httptest.Server{a, b} {
		port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
		if !strings.Contains(strings.Join(saw.Cookies, " "), "reach_session_"+port) {
			t.Errorf("cookies %v: none is the session of the UI on port %s", saw.Cookies, port)
		}
	}
}
