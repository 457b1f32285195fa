package ui

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// revocable is a Login of one key, rk_carol, that the test revokes.
type revocable struct {
	mu      sync.Mutex
	revoked bool
}

func (k *revocable) check(cred string) (*auth.Identity, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if cred != "rk_carol" || k.revoked {
		return nil, auth.ErrBadKey
	}
	return &auth.Identity{Principal: "carol", Tenant: "acme", Method: "api_key", KeyID: "key_c"}, nil
}

func (k *revocable) revoke() {
	k.mu.Lock()
	k.revoked = true
	k.mu.Unlock()
}

func (k *revocable) login() *Login {
	return &Login{
		Header: func(r *http.Request) (*auth.Identity, error) {
			return k.check(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		},
		Credential: func(_ context.Context, c string) (*auth.Identity, time.Time, error) {
			id, err := k.check(c)
			return id, time.Time{}, err
		},
		Valid: func(*auth.Identity) bool {
			k.mu.Lock()
			defer k.mu.Unlock()
			return !k.revoked
		},
	}
}

// TestLiveStreamEndsWithItsSignIn: the UI's live updates (GET /ui/live)
// stream for as long as the browser keeps them open, each event saying
// that what the principal's pages show changed. A stream opened while
// signed in went on after a logout, after the API key it was opened with
// (or whose session it was opened in) was revoked: whoever held the
// browser or the key was told of every change of the principal's
// requests and approvals after they were no longer signed in. The stream
// ends once its sign-in no longer holds, and the browser's reconnection is
// refused 401.
func TestLiveStreamEndsWithItsSignIn(t *testing.T) {
	for _, how := range []string{"logout", "session's key revoked", "header's key revoked"} {
		t.Run(how, func(t *testing.T) {
			keys := &revocable{}
			srv := httptest.NewServer(New(Options{Runtime: reach.New(nil), Login: keys.login(),
				Actor: func(r *http.Request) Actor {
					id, _ := auth.IdentityFrom(r.Context())
					return Actor{Principal: id.Principal, Tenant: id.Tenant}
				}}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var session *http.Cookie
			if how != "header's key revoked" {
				session = signInOver(t, srv.URL, "rk_carol")
			}
			do := func(method, path string, form url.Values) *http.Response {
				var body io.Reader
				if form != nil {
					body = strings.NewReader(form.Encode())
				}
				r, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, body)
				if form != nil {
					r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				}
				if session != nil {
					r.AddCookie(session)
				} else {
					r.Header.Set("Authorization", "Bearer rk_carol")
				}
				resp, err := noRedirect.Do(r)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			var token string
			if how == "logout" {
				resp := do("GET", "/ui/", nil)
				m := csrfRe.FindStringSubmatch(readAll(resp))
				resp.Body.Close()
				if m == nil {
					t.Fatalf("the page signed in: %s, no form token", resp.Status)
				}
				token = m[1]
			}
			live := do("GET", "/ui/live", nil)
			defer live.Body.Close()
			if live.StatusCode != http.StatusOK {
				t.Fatalf("live updates signed in: %s", live.Status)
			}
			events := bufio.NewReader(live.Body)
			if line, err := events.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
				t.Fatalf("live updates' first event: %q, %v", line, err)
			}
			switch how {
			case "logout":
				resp := do("POST", "/ui/logout", url.Values{"csrf": {token}})
				resp.Body.Close()
				if resp.StatusCode != http.StatusSeeOther {
					t.Fatalf("logout: %s", resp.Status)
				}
			default:
				keys.revoke()
			}
			// The stream ends: read to its end (a stream that never ends
			// fails the test at ctx's minute).
			_, err := io.Copy(io.Discard, events)
			if err != nil {
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					t.Fatalf("the live updates went on for a minute after the %s", how)
				}
				t.Fatalf("reading the live updates after the %s: %v", how, err)
			}
			again := do("GET", "/ui/live", nil)
			again.Body.Close()
			if again.StatusCode != http.StatusUnauthorized {
				t.Errorf("live updates opened again after the %s: %s, want 401", how, again.Status)
			}
		})
	}
}

// signInOver signs in at base's login form with cred and returns the
// session cookie.
func signInOver(t *testing.T, base, cred string) *http.Cookie {
	t.Helper()
	resp, err := http.Get(base + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(resp)
	resp.Body.Close()
	m := loginTokenRe.FindStringSubmatch(page)
	if m == nil || len(resp.Cookies()) != 1 {
		t.Fatalf("login page: no token (%d cookies)", len(resp.Cookies()))
	}
	r, _ := http.NewRequest("POST", base+"/ui/login", strings.NewReader(url.Values{"csrf": {m[1]}, "credential": {cred}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.AddCookie(resp.Cookies()[0])
	resp, err = noRedirect.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := cookiesNamed(resp, cookiePlain)
	if len(cs) != 1 {
		t.Fatalf("signing in with %s: %s, %d session cookies", cred, resp.Status, len(cs))
	}
	return cs[0]
}

// loginTokenRe finds the login form's token.
var loginTokenRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
