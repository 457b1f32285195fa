package gateway

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/auth"
)

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestUILogin: with auth on, GET / leads to the UI and the UI to its
// login page; an API key pasted there gives a session cookie (not the key)
// that opens the UI and nothing else (the API still wants a key); the
// session ends when the key is revoked.
func TestUILogin(t *testing.T) {
	g, base, _, keys := authGateway(t, "")
	resp, err := noFollow.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / = %s to %q, want 302 to /ui/", resp.Status, resp.Header.Get("Location"))
	}
	resp, err = noFollow.Get(base + "/ui/approvals")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/ui/login?next=") {
		t.Fatalf("GET /ui/approvals without a session = %s to %q", resp.Status, resp.Header.Get("Location"))
	}
	resp, err = http.Get(base + "/ui/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	if tok == nil || len(resp.Cookies()) != 1 {
		t.Fatalf("login page: %s", page)
	}
	form := url.Values{"csrf": {string(tok[1])}, "credential": {keys["dave"]}}
	req, _ := http.NewRequest("POST", base+"/ui/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(resp.Cookies()[0])
	resp, err = noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if strings.Contains(c.Name, "reach_session") && c.Value != "" {
			session = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || session == nil || session.Value == keys["dave"] || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login with dave's key = %s, cookie %+v", resp.Status, session)
	}
	as := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.AddCookie(session)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := as("/ui/tools"); code != 200 || !strings.Contains(body, `<span id="user">dave</span>`) {
		t.Errorf("/ui/tools with the session = %d, signed in as dave: %v", code, strings.Contains(body, "dave"))
	}
	if code, _ := as("/v1/requests"); code != http.StatusUnauthorized {
		t.Errorf("/v1/requests with the UI's cookie = %d, want 401: the cookie opens the UI only", code)
	}
	ks, _ := auth.OpenKeys(auth.KeysPath(g.cfg.Data))
	list, _ := ks.List()
	for _, k := range list {
		if k.Principal == "dave" {
			ks.Revoke(k.ID)
		}
	}
	// The gateway reads the key file again within a second.
	deadline := time.Now().Add(10 * time.Second)
	for code, _ := as("/ui/tools"); code != http.StatusSeeOther; code, _ = as("/ui/tools") {
		if time.Now().After(deadline) {
			t.Fatalf("/ui/tools with the session of a revoked key = %d, want 303 to the login page", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
