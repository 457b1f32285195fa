package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configure an Authenticator. A nil *Options, or one with neither
// Keys nor JWT, means no authentication: every request passes, anonymous.
type Options struct {
	Keys *Keys     // API keys; nil for none
	JWT  *Verifier // bearer JWTs; nil for none
	// Open lists paths served without authentication; if nil, /healthz.
	Open []string
	// Logger receives failed attempts; if nil, they are not logged.
	Logger *slog.Logger
}

// Authenticator checks the credentials of HTTP requests. Safe for
// concurrent use.
type Authenticator struct {
	keys *Keys
	jwt  *Verifier
	open []string
	log  *slog.Logger
}

// New returns an Authenticator with the options (nil for none).
func New(opts *Options) *Authenticator {
	a := &Authenticator{open: []string{"/healthz"}, log: slog.New(slog.DiscardHandler)}
	if opts != nil {
		a.keys, a.jwt = opts.Keys, opts.JWT
		if opts.Open != nil {
			a.open = opts.Open
		}
		if opts.Logger != nil {
			a.log = opts.Logger
		}
	}
	return a
}

// Open reports whether requests to path need no credentials.
func (a *Authenticator) Open(path string) bool { return slices.Contains(a.open, path) }

// Enabled reports whether any authentication is configured.
func (a *Authenticator) Enabled() bool { return a.keys != nil || a.jwt != nil }

// Errors of Authenticate.
var (
	ErrNoCredentials = errors.New("no credentials")
	ErrBadKey        = errors.New("unknown or revoked API key")
	// ErrNotAKey is a credential that is no reach API key at all (no
	// rk_): an OpenAI key, say, which an app pointed at reach's model
	// proxy keeps sending. errors.Is(err, ErrBadKey) holds for it.
	ErrNotAKey = fmt.Errorf("%w: not a reach API key", ErrBadKey)
)

// credentialHeaders are the request headers that carry a caller's
// credentials for reach: an API key (X-Reach-Key, or Authorization: Bearer
// rk_...), a JWT (Authorization), the UI's session (Cookie), and, for a
// proxy between the caller and reach, Proxy-Authorization.
var credentialHeaders = []string{"Authorization", "X-Reach-Key", "Cookie", "Proxy-Authorization"}

// StripCredentials deletes from h the headers that carry a caller's
// credentials for reach, before a request is handed to code that may pass
// headers on (to an agent, an upstream): they are reach's, never another's.
func StripCredentials(h http.Header) {
	for _, k := range credentialHeaders {
		h.Del(k)
	}
}

// Authenticate returns the identity of an HTTP request: an API key in
// X-Reach-Key or "Authorization: Bearer rk_...", or a bearer JWT.
func (a *Authenticator) Authenticate(r *http.Request) (*Identity, error) {
	if k := r.Header.Get("X-Reach-Key"); k != "" {
		return a.apiKey(k)
	}
	authz := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(authz, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return nil, ErrNoCredentials
	}
	tok = strings.TrimSpace(tok)
	if strings.HasPrefix(tok, KeyPrefix) || a.jwt == nil {
		return a.apiKey(tok)
	}
	return a.jwt.Verify(r.Context(), tok)
}

func (a *Authenticator) apiKey(k string) (*Identity, error) {
	if !strings.HasPrefix(k, KeyPrefix) {
		return nil, ErrNotAKey
	}
	if a.keys == nil {
		return nil, ErrBadKey
	}
	id, ok := a.keys.Authenticate(k)
	if !ok {
		return nil, ErrBadKey
	}
	return id, nil
}

// Middleware authenticates every request but those to the open paths and
// puts the caller's Identity in its context; it answers 401 with a JSON
// error when the credentials are missing or wrong. With no authentication
// configured it lets everything through unchanged.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	if !a.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range a.open {
			if r.URL.Path == p {
				next.ServeHTTP(w, r)
				return
			}
		}
		if oauthDiscovery(r) {
			a.noOAuth(w, r)
			return
		}
		id, err := a.Authenticate(r)
		if err != nil {
			a.log.Info("authentication failed", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			unauthorized(w, err, a.suggestion())
			return
		}
		ctx := WithIdentity(r.Context(), id)
		if r.Method == http.MethodGet {
			// A stream (an MCP session's GET, /sse) lasts as long as its
			// client keeps it: it ends once its credentials no longer hold.
			// Every GET is watched, whatever its Accept: /sse checks none,
			// and /mcp takes "*/*", "text/*", any case, several headers.
			var stop func()
			ctx, stop = a.untilInvalid(ctx, r.Header)
			defer stop()
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// oauthDiscovery reports whether r is one an MCP client sends, after a
// 401, to find an OAuth server: RFC 9728's protected resource metadata,
// RFC 8414's or OpenID's server metadata (at the root, or after the path,
// as clients try both), or the dynamic client registration clients fall
// back to when those are missing.
func oauthDiscovery(r *http.Request) bool {
	p := r.URL.Path
	if r.Method == http.MethodPost && p == "/register" {
		return true
	}
	if r.Method != http.MethodGet {
		return false
	}
	for _, doc := range []string{"oauth-protected-resource", "oauth-authorization-server", "openid-configuration"} {
		if p == "/.well-known/"+doc || strings.HasPrefix(p, "/.well-known/"+doc+"/") || strings.HasSuffix(p, "/.well-known/"+doc) {
			return true
		}
	}
	return false
}

// noOAuth answers an OAuth discovery (oauthDiscovery) with 404, needing no
// credentials: reach takes API keys or JWTs it is given, and offers no
// OAuth login. The body says what to send, and the MCP SDKs show it to
// their user, where a 401 here would send them looking for a login. The
// registration's is in OAuth's error format (RFC 7591: error,
// error_description), the one its clients read; the metadata's in reach's.
func (a *Authenticator) noOAuth(w http.ResponseWriter, r *http.Request) {
	msg := "This gateway offers no OAuth login. " + a.suggestion()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNotFound)
	if r.Method == http.MethodPost {
		json.NewEncoder(w).Encode(map[string]string{"error": "no_oauth", "error_description": msg})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
		"code":       "no_oauth",
		"message":    msg,
		"suggestion": a.suggestion(),
	}})
}

// StreamRecheck is how often a stream's credentials are checked again
// (Middleware): a revoked key's or an expired JWT's stream ends within it.
// A variable for tests.
var StreamRecheck = time.Second

// ErrCredentialsEnded is the cause of a stream's context ended because its
// credentials no longer hold (revoked, expired).
var ErrCredentialsEnded = errors.New("the stream's credentials were revoked or expired")

// untilInvalid returns ctx cancelled (ErrCredentialsEnded) once the
// credentials in h no longer authenticate (checked every StreamRecheck),
// and a stop that ends the watch. Only the credential headers are kept:
// the handler may rewrite the request's own.
func (a *Authenticator) untilInvalid(ctx context.Context, h http.Header) (context.Context, func()) {
	cred := http.Header{}
	for _, k := range []string{"Authorization", "X-Reach-Key"} {
		if v := h.Values(k); len(v) > 0 {
			cred[k] = slices.Clone(v)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	// A timer, not a goroutine, per GET: most end before it fires.
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock()
	t = time.AfterFunc(StreamRecheck, func() {
		if ctx.Err() != nil {
			return
		}
		if _, err := a.Authenticate(&http.Request{Header: cred}); err != nil {
			a.log.Info("a stream's credentials no longer hold: it is ended", "err", err)
			cancel(ErrCredentialsEnded)
			return
		}
		mu.Lock()
		if !stopped {
			t.Reset(StreamRecheck)
		}
		mu.Unlock()
	})
	mu.Unlock()
	return ctx, func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		cancel(nil)
	}
}

// Unauthorized answers 401 for err, an authentication's failure, with the
// challenge and a JSON error that says what to send (ErrNoCredentials: no
// credentials at all).
func Unauthorized(w http.ResponseWriter, err error) {
	unauthorized(w, err, suggestKeyOrJWT)
}

const suggestKeyOrJWT = "Send an API key (Authorization: Bearer rk_... or X-Reach-Key: rk_...) or a bearer JWT from the configured issuer."

// suggestion says what to send, naming only what the gateway takes: API
// keys, JWTs, or both.
func (a *Authenticator) suggestion() string {
	switch {
	case a.jwt == nil:
		return "Send an API key (Authorization: Bearer rk_... or X-Reach-Key: rk_...); an operator makes one with reach keys create."
	case a.keys == nil:
		return "Send a bearer JWT from the configured issuer (Authorization: Bearer <JWT>); this gateway takes no API keys."
	}
	return suggestKeyOrJWT
}

func unauthorized(w http.ResponseWriter, err error, suggestion string) {
	msg := "The credentials are not valid."
	challenge := `Bearer realm="reach", error="invalid_token"`
	switch {
	case errors.Is(err, ErrNoCredentials):
		msg = "This endpoint needs credentials."
		challenge = `Bearer realm="reach"`
	case errors.Is(err, ErrNotAKey):
		// The one part the OpenAI SDKs show is the message.
		msg = "The credential sent is not a reach API key (those begin rk_): a client of reach, an OpenAI client pointed at reach's /v1 too, sends a reach API key (its apiKey, or OPENAI_API_KEY); reach sends the model its own key, model.api_key."
	case errors.Is(err, ErrBadKey):
		msg = "The API key is unknown or revoked."
	case errors.Is(err, ErrTokenExpired):
		msg = "The token has expired."
	case errors.Is(err, ErrTokenInvalid):
		msg = "The token is not valid."
	}
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusUnauthorized)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
		"code":       "unauthenticated",
		"message":    msg,
		"suggestion": suggestion,
	}})
}

// Credential checks one credential, as the UI's login form receives it: an
// API key (rk_...) or a JWT. It returns the identity and until when the
// credential holds (a JWT's expiry; zero for a key, which holds until it is
// revoked: see Valid).
func (a *Authenticator) Credential(ctx context.Context, cred string) (*Identity, time.Time, error) {
	if strings.HasPrefix(cred, KeyPrefix) || a.jwt == nil {
		id, err := a.apiKey(cred)
		return id, time.Time{}, err
	}
	id, err := a.jwt.Verify(ctx, cred)
	if err != nil {
		return nil, time.Time{}, err
	}
	_, claims, _, _, err := ParseJWT(cred)
	if err != nil {
		return nil, time.Time{}, err
	}
	exp, _, _ := numericDate(claims, "exp")
	return id, exp, nil
}

// Valid reports whether an identity this Authenticator returned still
// holds: for an API key, that it is not revoked; a JWT holds until it
// expires.
func (a *Authenticator) Valid(id *Identity) bool {
	if id.Method != "api_key" {
		return true
	}
	return a.keys != nil && a.keys.Active(id.KeyID)
}
