package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// twoPrincipals is a Login with two keys: rk_alice and rk_bob, of one
// tenant.
func twoPrincipals() *Login {
	check := func(cred string) (*auth.Identity, error) {
		switch cred {
		case "rk_alice":
			return &auth.Identity{Principal: "alice", Tenant: "acme", Method: "api_key", KeyID: "key_a"}, nil
		case "rk_bob":
			return &auth.Identity{Principal: "bob", Tenant: "acme", Method: "api_key", KeyID: "key_b"}, nil
		}
		return nil, auth.ErrBadKey
	}
	return &Login{
		Header: func(r *http.Request) (*auth.Identity, error) {
			return check(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		},
		Credential: func(_ context.Context, c string) (*auth.Identity, time.Time, error) {
			id, err := check(c)
			return id, time.Time{}, err
		},
	}
}

// signInTo posts the login form to h with cred and returns the session
// cookie it was given ("" if none).
func signInTo(t *testing.T, h http.Handler, cred string) string {
	t.Helper()
	const tok = "login-form-token-of-this-browser"
	r := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"csrf": {tok}, "credential": {cred}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(&http.Cookie{Name: loginPlain, Value: tok})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	for _, c := range w.Result().Cookies() {
		if c.Name == cookiePlain && c.Value != "" {
			return c.Value
		}
	}
	t.Fatalf("signing in with %s: %d, no session cookie", cred, w.Code)
	return ""
}

// pageWith returns the status of GET /ui/approvals with the session
// cookie: 200 while the session holds, a redirect to the login page once
// it is gone.
func pageWith(h http.Handler, cookie string) int {
	r := httptest.NewRequest("GET", "/ui/approvals", nil)
	r.AddCookie(&http.Cookie{Name: cookiePlain, Value: cookie})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// TestSignInsDoNotSignOthersOut: the UI keeps at most maxSessions
// sessions and dropped the oldest past it, whoever it was: bob, who may
// sign in, signed alice out by signing in 10,000 times (6.5 s against
// reach serve). Past maxSessionsEach of his own, his own oldest goes.
func TestSignInsDoNotSignOthersOut(t *testing.T) {
	h := New(Options{Runtime: reach.New(nil), Login: twoPrincipals()})
	alice := signInTo(t, h, "rk_alice")
	if code := pageWith(h, alice); code != http.StatusOK {
		t.Fatalf("alice's page: %d", code)
	}
	first := signInTo(t, h, "rk_bob")
	var last string
	for range maxSessions {
		last = signInTo(t, h, "rk_bob")
	}
	if code := pageWith(h, alice); code != http.StatusOK {
		t.Errorf("alice's page after bob signed in %d times: %d, want 200 (her session kept)", maxSessions+1, code)
	}
	if code := pageWith(h, last); code != http.StatusOK {
		t.Errorf("bob's last session: %d", code)
	}
	if code := pageWith(h, first); code != http.StatusSeeOther {
		t.Errorf("bob's first session, %d sign-ins later: %d, want it dropped (303 to the login page)", maxSessions, code)
	}
}

// TestLiveStreamsBoundedPerPrincipal: every live stream (GET /ui/live)
// reads all the requests and approvals the UI knows of twice a second;
// one principal could open any number (200 of bob's took a quarter of a
// core of reach serve). Past maxLive of his, bob's next is refused 429,
// alice's is not, and one of his that ends makes room.
func TestLiveStreamsBoundedPerPrincipal(t *testing.T) {
	srv := httptest.NewServer(New(Options{Runtime: reach.New(nil), Login: twoPrincipals(),
		Actor: func(r *http.Request) Actor {
			id, _ := auth.IdentityFrom(r.Context())
			return Actor{Principal: id.Principal, Tenant: id.Tenant}
		}}))
	defer srv.Close()
	open := func(key string) (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(t.Context())
		r, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/live", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp, func() { cancel(); resp.Body.Close() }
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range maxLive {
		resp, cancel := open("rk_bob")
		cancels = append(cancels, cancel)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("bob's live stream %d: %s", i+1, resp.Status)
		}
	}
	resp, cancel := open("rk_bob")
	if resp.StatusCode != http.StatusTooManyRequests {
		cancel()
		t.Fatalf("bob's live stream %d: %s, want 429", maxLive+1, resp.Status)
	}
	body := readAll(resp)
	cancel()
	if !strings.Contains(body, "too_many_streams") || !strings.Contains(body, "Close the UI's tabs") {
		t.Errorf("bob's live stream %d refused with %s, want too_many_streams saying what to do", maxLive+1, body)
	}
	resp, cancel = open("rk_alice")
	cancels = append(cancels, cancel)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("alice's live stream beside bob's %d: %s", maxLive, resp.Status)
	}
	cancels[0]() // one of bob's ends: the server sees it go
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, cancel := open("rk_bob")
		cancels = append(cancels, cancel)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's live stream after one of his ended: %s", resp.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSignInsBoundedPerTenant: the bound of sessions is a principal's in
// its tenant: bob of acme signing in again and again drops his own oldest,
// not the session of bob of globex, another principal of the same name.
func TestSignInsBoundedPerTenant(t *testing.T) {
	check := func(cred string) (*auth.Identity, error) {
		switch cred {
		case "rk_bob_acme":
			return &auth.Identity{Principal: "bob", Tenant: "acme", Method: "api_key", KeyID: "key_a"}, nil
		case "rk_bob_globex":
			return &auth.Identity{Principal: "bob", Tenant: "globex", Method: "api_key", KeyID: "key_g"}, nil
		}
		return nil, auth.ErrBadKey
	}
	h := New(Options{Runtime: reach.New(nil), Login: &Login{
		Header: func(r *http.Request) (*auth.Identity, error) {
			return check(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		},
		Credential: func(_ context.Context, c string) (*auth.Identity, time.Time, error) {
			id, err := check(c)
			return id, time.Time{}, err
		},
	}})
	globex := signInTo(t, h, "rk_bob_globex")
	first := signInTo(t, h, "rk_bob_acme")
	for range maxSessionsEach {
		signInTo(t, h, "rk_bob_acme")
	}
	if code := pageWith(h, globex); code != http.StatusOK {
		t.Errorf("globex bob's page after acme bob signed in %d times: %d, want 200 (his session kept)", maxSessionsEach+1, code)
	}
	if code := pageWith(h, first); code != http.StatusSeeOther {
		t.Errorf("acme bob's first session, %d sign-ins later: %d, want it dropped (303 to the login page)", maxSessionsEach, code)
	}
}
