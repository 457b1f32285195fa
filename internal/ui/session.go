package ui

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/forwarded"
)

// Login is how the UI signs people in when the gateway authenticates its
// callers. With it, every page but the login page and the static assets
// needs an identity: credentials in the request's headers (a program with
// an API key), or a session cookie that the login page gives for an API key
// or a JWT pasted into it.
//
// The cookie holds a random session id, never the credential: the session
// (its identity, its CSRF token, its expiry) is kept in the gateway's
// memory, so a restart signs everyone out. It is HttpOnly, SameSite=Strict,
// and Secure when the page was served over TLS, behind a proxy that says
// https, or on an address that is not a loopback one.
type Login struct {
	// Header returns the identity of the credentials in a request's
	// headers (Authorization, X-Reach-Key), or auth.ErrNoCredentials.
	// Required.
	Header func(*http.Request) (*auth.Identity, error)
	// Credential checks an API key or a JWT pasted into the login form. It
	// returns the identity and until when it holds (zero: no end of its
	// own). Required.
	Credential func(ctx context.Context, credential string) (*auth.Identity, time.Time, error)
	// Valid reports whether a session's identity still holds (its API key
	// is not revoked), asked on every request; if nil, always.
	Valid func(*auth.Identity) bool
	// TTL bounds a session from its login; if zero, 8 hours. A session of
	// a JWT ends with the token.
	TTL time.Duration
}

// maxSessions bounds the sessions kept; beyond it the oldest is dropped.
// maxSessionsEach bounds one principal's (in its tenant): beyond it, its
// own oldest is dropped, so that no one who may sign in can sign everyone
// else out by signing in again and again.
const (
	maxSessions     = 10000
	maxSessionsEach = 32
)

type session struct {
	id      *auth.Identity
	csrf    string
	created time.Time
	expires time.Time
}

// sessions are the UI's signed-in browsers, by the SHA-256 of their
// cookie's value. Safe for concurrent use.
type sessions struct {
	mu sync.Mutex
	m  map[[32]byte]*session
}

func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create keeps a new session for id and returns its cookie value.
func (s *sessions) create(id *auth.Identity, expires, now time.Time) (string, *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[32]byte]*session{}
	}
	var oldest, oldestMine [32]byte
	var at, atMine time.Time
	mine := 0
	for k, v := range s.m {
		if !now.Before(v.expires) {
			delete(s.m, k)
			continue
		}
		if at.IsZero() || v.created.Before(at) {
			oldest, at = k, v.created
		}
		if v.id.Principal == id.Principal && v.id.Tenant == id.Tenant {
			mine++
			if atMine.IsZero() || v.created.Before(atMine) {
				oldestMine, atMine = k, v.created
			}
		}
	}
	switch {
	case mine >= maxSessionsEach:
		delete(s.m, oldestMine)
	case len(s.m) >= maxSessions:
		delete(s.m, oldest)
	}
	value := randomToken()
	ss := &session{id: id, csrf: randomToken(), created: now, expires: expires}
	s.m[sha256.Sum256([]byte(value))] = ss
	return value, ss
}

// get returns the live session of a cookie value.
func (s *sessions) get(value string, now time.Time) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := sha256.Sum256([]byte(value))
	ss, ok := s.m[k]
	if !ok {
		return nil, false
	}
	if !now.Before(ss.expires) {
		delete(s.m, k)
		return nil, false
	}
	return ss, true
}

func (s *sessions) drop(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(value)))
}

// Cookie names: a secure one carries the __Host- prefix (Secure, Path=/,
// no Domain: no other host or path may set or shadow it).
const (
	cookieSecure = "__Host-reach_session"
	cookiePlain  = "reach_session"
	loginSecure  = "__Host-reach_login"
	loginPlain   = "reach_login"
)

// secureRequest reports whether a cookie set in answer to r must be
// Secure: r came over TLS, through a proxy that says https (forwarded.HTTPS:
// the first entry of X-Forwarded-Proto, or Forwarded's proto, as the agent
// card reads them), or to an address that is not a loopback one (where the
// browser must reach the gateway over TLS to send it back).
func secureRequest(r *http.Request) bool {
	if forwarded.HTTPS(r) {
		return true
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ta, ok := a.(*net.TCPAddr); ok {
			return !ta.IP.IsLoopback()
		}
	}
	return false
}

// cookieName is the name of the cookie secure or plain in answer to r. A
// plain one (http on a loopback address) carries the port served: a
// browser sends a host's cookies to each of its ports, so two gateways on
// 127.0.0.1 (two instances, a test one beside the real one) shared one
// session cookie, and signing in to one signed the browser out of the
// other. A secure one does not (__Host- is per host too): behind one https
// name, the instances of a cluster are one site.
func cookieName(r *http.Request, secure, plain string) string {
	if secureRequest(r) {
		return secure
	}
	if port := servedPort(r); port != "" {
		return plain + "_" + port
	}
	return plain
}

// servedPort is the port r came to (the server's side of its connection),
// else its Host's, or "".
func servedPort(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok && a.Port != 0 {
		return strconv.Itoa(a.Port)
	}
	if _, port, err := net.SplitHostPort(r.Host); err == nil {
		return port
	}
	return ""
}

func setCookie(w http.ResponseWriter, r *http.Request, secure, plain, value string, maxAge int) {
	c := &http.Cookie{Name: cookieName(r, secure, plain), Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: secureRequest(r), SameSite: http.SameSiteStrictMode}
	if !c.Secure {
		c.Path = "/ui/"
	}
	http.SetCookie(w, c)
}

// readCookie reads the cookie of the name an answer to r sets
// (cookieName): over TLS the __Host- one only. A cookie of the plain name
// can be set by pages the prefix keeps out (a sibling domain, plain http on
// another port of the host); read over TLS, one planted there would sign
// the browser in to the planter's own session, or be a login token the
// planter knows.
func readCookie(r *http.Request, secure, plain string) string {
	if c, err := r.Cookie(cookieName(r, secure, plain)); err == nil {
		return c.Value
	}
	return ""
}

type sessionKey struct{}

// who is the session (or, without one, the CSRF token) a request of the
// UI runs under.
type who struct {
	csrf      string
	principal string // "" when no one signed in
	signedIn  bool   // a session cookie, so Log out is offered
	// holds reports whether what signed the request in still does (its
	// session not signed out nor expired, its API key not revoked, its
	// JWT not expired), for a stream that outlives its sign-in (the live
	// updates); nil: always (no Login).
	holds func() bool
}

// stillSignedIn reports whether what signed r in still holds (who.holds).
func stillSignedIn(r *http.Request) bool {
	h := whoFrom(r.Context()).holds
	return h == nil || h()
}

func whoFrom(ctx context.Context) who {
	w, _ := ctx.Value(sessionKey{}).(who)
	return w
}

// errCSRF is the refusal of a form without the page's token.
var errCSRF = errors.New("the form's token is missing or stale")

func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// safeNext returns where to go after the login: a path of the UI, or /ui/.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/ui/") && !strings.HasPrefix(next, "/ui//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return "/ui/"
}

func (u *UI) ttl() time.Duration {
	if u.o.Login.TTL > 0 {
		return u.o.Login.TTL
	}
	return 8 * time.Hour
}

// signIn authenticates a request of the UI when Login is set. It returns
// the request with the identity in its context, or answers and returns
// nil: a redirect to the login page for a page, 401 for the rest.
func (u *UI) signIn(w http.ResponseWriter, r *http.Request) *http.Request {
	l := u.o.Login
	if r.Header.Get("Authorization") != "" || r.Header.Get("X-Reach-Key") != "" {
		id, err := l.Header(r)
		if err != nil {
			u.log.Info("UI authentication failed", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			writeError(w, http.StatusUnauthorized, "unauthenticated", "The credentials are not valid.",
				"Send a valid API key or JWT, or sign in at /ui/login.")
			return nil
		}
		// Credentials in headers are not sent by a browser on its own: a
		// program's POST needs no form token.
		holds := func() bool {
			again, err := l.Header(r) // a key revoked, a JWT expired since
			return err == nil && again.Principal == id.Principal && again.Tenant == id.Tenant
		}
		ctx := context.WithValue(auth.WithIdentity(r.Context(), id), sessionKey{}, who{principal: id.Principal, holds: holds})
		return r.WithContext(ctx)
	}
	if v := readCookie(r, cookieSecure, cookiePlain); v != "" {
		if ss, ok := u.sessions.get(v, time.Now()); ok {
			if l.Valid == nil || l.Valid(ss.id) {
				holds := func() bool { // signed out, expired or its key revoked since
					again, ok := u.sessions.get(v, time.Now())
					return ok && again == ss && (l.Valid == nil || l.Valid(ss.id))
				}
				ctx := context.WithValue(auth.WithIdentity(r.Context(), ss.id), sessionKey{},
					who{csrf: ss.csrf, principal: ss.id.Principal, signedIn: true, holds: holds})
				return r.WithContext(ctx)
			}
			u.sessions.drop(v) // its key was revoked
		}
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Path != "/ui/live" && r.Header.Get("X-Reach-Fragment") == "" {
		next := r.URL.Path
		if r.URL.RawQuery != "" {
			next += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, "/ui/login?next="+urlQueryEscape(next), http.StatusSeeOther)
		return nil
	}
	if r.Method == http.MethodPost && strings.Contains(r.Header.Get("Accept"), "text/html") {
		// A form of a page loaded before the gateway restarted (its
		// sessions are in memory) or before the session ended: a page
		// saying nothing was done, its link through the sign-in back to
		// the page, not the JSON error.
		u.renderStatus(w, r, http.StatusUnauthorized, "stale", struct {
			page
			Back   string
			SignIn bool
		}{u.page(r, "Form not sent", "", ""), "/ui/login?next=" + urlQueryEscape(formBack(r.URL.Path)), true})
		return nil
	}
	writeError(w, http.StatusUnauthorized, "unauthenticated", "You are not signed in, or your session has ended.",
		"Sign in at /ui/login, then send the form again.")
	return nil
}

// loginPage shows the login form, with a fresh token in a cookie and in
// the form (a cross-site page cannot read either, so it cannot sign a
// browser in as someone else).
func (u *UI) loginPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	// One token per browser while it signs in: a second tab's login page
	// does not make the first one's form stale.
	tok := readCookie(r, loginSecure, loginPlain)
	if len(tok) != len(randomToken()) {
		tok = randomToken()
	}
	setCookie(w, r, loginSecure, loginPlain, tok, 600)
	w.Header().Set("Cache-Control", "no-store")
	u.renderStatus(w, r, status, "login", struct {
		page
		Next, Error, Token string
	}{page{Title: "Sign in", Nav: "login"}, safeNext(r.FormValue("next")), msg, tok})
}

func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	if u.o.Login == nil {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	if r.Method != http.MethodPost {
		u.loginPage(w, r, http.StatusOK, "")
		return
	}
	if !sameToken(r.PostFormValue("csrf"), readCookie(r, loginSecure, loginPlain)) {
		u.loginPage(w, r, http.StatusForbidden, "The sign-in form expired. Paste your key or token again.")
		return
	}
	cred := strings.TrimSpace(r.PostFormValue("credential"))
	cred = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(cred, "Bearer "), "bearer "))
	if cred == "" {
		u.loginPage(w, r, http.StatusBadRequest, "Paste an API key (rk_...) or a JWT.")
		return
	}
	id, until, err := u.o.Login.Credential(r.Context(), cred)
	if err != nil {
		u.log.Info("UI sign-in failed", "remote", r.RemoteAddr, "err", err)
		u.loginPage(w, r, http.StatusUnauthorized, "That key or token is not valid: unknown, revoked or expired.")
		return
	}
	now := time.Now()
	expires := now.Add(u.ttl())
	if !until.IsZero() && until.Before(expires) {
		expires = until
	}
	value, _ := u.sessions.create(id, expires, now)
	setCookie(w, r, loginSecure, loginPlain, "", -1)
	setCookie(w, r, cookieSecure, cookiePlain, value, int(time.Until(expires).Seconds()))
	u.log.Info("signed in to the UI", "principal", id.Principal, "method", id.Method, "until", expires.UTC().Format(time.RFC3339))
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// logout ends the session (its form token was checked before).
func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	if v := readCookie(r, cookieSecure, cookiePlain); v != "" {
		u.sessions.drop(v)
	}
	setCookie(w, r, cookieSecure, cookiePlain, "", -1)
	u.log.Info("signed out of the UI", "principal", whoFrom(r.Context()).principal)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}
