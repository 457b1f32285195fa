package auth

import (
	"bytes"
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/origin"
)

// Token errors, matched with errors.Is.
var (
	ErrTokenInvalid = errors.New("invalid token")
	ErrTokenExpired = errors.New("token expired")
)

// JWTOptions configure a Verifier.
type JWTOptions struct {
	// JWKS is where the signing keys are: a file path or an http(s) URL.
	JWKS string
	// Issuer must equal the token's iss; required.
	Issuer string
	// Audience, if not empty, must be the token's aud or one of them.
	Audience string
	// Claims naming the principal (if empty, "sub"), its roles ("roles"; an
	// array of strings or a space-separated string), tenant ("tenant") and
	// department ("department", an attribute). A dotted name reaches into
	// objects ("realm_access.roles") when no claim has that name as it is
	// ("https://reach.example.com/roles"); a token with both, different,
	// is refused.
	PrincipalClaim, RolesClaim, TenantClaim, DepartmentClaim string
	// Attributes maps more attribute names to claims.
	Attributes map[string]string
	// Leeway for exp, nbf and iat; if zero, 30s.
	Leeway time.Duration
	// MinRefresh is the least time between two reads of the JWKS caused by
	// an unknown key id (key rotation); if zero, 10s.
	MinRefresh time.Duration
	// MaxAge is how long keys are used before the JWKS is read again; if
	// zero, 1h.
	MaxAge time.Duration
	// Client fetches a JWKS URL; if nil, one with a 10s timeout.
	Client *http.Client
}

// maxTokenBytes bounds a token; maxJWKSBytes bounds a key set.
const (
	maxTokenBytes = 16 << 10
	maxJWKSBytes  = 1 << 20
)

// Verifier checks bearer JWTs signed with RS256 or ES256 against a JWKS,
// read when first needed and again on an unknown key id (rotation) or when
// older than MaxAge. Safe for concurrent use.
type Verifier struct {
	o JWTOptions

	mu      sync.Mutex
	keys    []jwkKey
	fetched time.Time
	lastTry time.Time
	lastErr error
	// reading is closed when the read of the key set under way ends; nil
	// when none is. One read at a time, made with v.mu not held: a token
	// whose key is in hand never waits for one.
	reading chan struct{}

	// Tokens already verified, by SHA-256, until they expire: agents send
	// the same token with every call, and a signature check costs 50-80 µs.
	cacheMu sync.Mutex
	cache   map[[32]byte]cachedToken
	gen     uint64 // of the key set: bumped when the JWKS is read again
}

type cachedToken struct {
	id      *Identity
	expires time.Time
	stored  time.Time // a token is verified again, against keys read again, after MaxAge
}

// maxCachedTokens bounds the verified-token cache.
const maxCachedTokens = 10_000

type jwkKey struct {
	kid string
	alg string // RS256 or ES256
	rsa *rsa.PublicKey
	ec  *ecdsa.PublicKey
}

// NewVerifier returns a Verifier; it reads no keys until the first token.
func NewVerifier(o *JWTOptions) (*Verifier, error) {
	v := &Verifier{o: *o}
	if v.o.JWKS == "" {
		return nil, errors.New("jwt: the JWKS (a file or a URL) is required")
	}
	if v.o.Issuer == "" {
		return nil, errors.New("jwt: the issuer is required")
	}
	v.o.PrincipalClaim = cmp.Or(v.o.PrincipalClaim, "sub")
	v.o.RolesClaim = cmp.Or(v.o.RolesClaim, "roles")
	v.o.TenantClaim = cmp.Or(v.o.TenantClaim, "tenant")
	v.o.DepartmentClaim = cmp.Or(v.o.DepartmentClaim, "department")
	v.o.Leeway = cmp.Or(v.o.Leeway, 30*time.Second)
	v.o.MinRefresh = cmp.Or(v.o.MinRefresh, 10*time.Second)
	v.o.MaxAge = cmp.Or(v.o.MaxAge, time.Hour)
	if err := checkJWKSURL(v.o.JWKS); err != nil {
		return nil, err
	}
	if v.o.Client == nil {
		v.o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	c := *v.o.Client // the caller's client is not changed
	c.CheckRedirect = jwksRedirect(c.CheckRedirect)
	v.o.Client = &c
	return v, nil
}

// The key set decides who anyone is: whoever can hand the gateway keys
// signs any identity. So it is read from a file, over https, or over plain
// http from the machine itself (loopback) only, and a redirect never leads
// from https to plain http: someone on the way between the gateway and an
// http host, or a redirect to one, would choose the keys.

// checkJWKSURL refuses a plain http JWKS URL whose host is not loopback.
func checkJWKSURL(src string) error {
	if !strings.HasPrefix(src, "http://") {
		return nil
	}
	u, err := url.Parse(src)
	if err != nil {
		return fmt.Errorf("jwt: the JWKS URL is not a URL: %w", err)
	}
	if !origin.Loopback(u.Hostname()) {
		return fmt.Errorf("jwt: the JWKS %s is plain http to a host that is not loopback: anyone on the way could hand the gateway keys "+
			"and sign tokens for any principal; use its https:// URL (or a copy of the key set in a file)", u.Redacted())
	}
	return nil
}

// maxJWKSRedirects bounds the redirects of one read of the key set, as
// net/http's default does.
const maxJWKSRedirects = 10

// jwksRedirect checks a redirect of the key set's read: at most
// maxJWKSRedirects, never from https to plain http, and to plain http
// only on loopback; then next, the client's own check, if any.
func jwksRedirect(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxJWKSRedirects {
			return fmt.Errorf("stopped after %d redirects", maxJWKSRedirects)
		}
		if req.URL.Scheme != "https" {
			if slices.ContainsFunc(via, func(r *http.Request) bool { return r.URL.Scheme == "https" }) {
				return fmt.Errorf("refused a redirect from https to %s://%s: the key set is read over https only", req.URL.Scheme, req.URL.Host)
			}
			if !origin.Loopback(req.URL.Hostname()) {
				return fmt.Errorf("refused a redirect to plain http off loopback (%s): the key set is read over https", req.URL.Host)
			}
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
}

// Refresh reads the JWKS now (at start-up, to fail early on a bad one);
// if a read is under way, it waits for that one.
func (v *Verifier) Refresh(ctx context.Context) error {
	v.mu.Lock()
	done := v.reading
	if done == nil {
		done = v.startRead(ctx)
	}
	v.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lastErr
}

// startRead starts a read of the key set and returns the channel closed
// when it ends; v.mu is held. The read is not the caller's: it is not
// cancelled with the request that started it (a client that hangs up
// would otherwise leave everyone with no new key until MinRefresh has
// passed), and it is bounded by the client's timeout, or 10s.
func (v *Verifier) startRead(ctx context.Context) chan struct{} {
	done := make(chan struct{})
	v.reading, v.lastTry = done, time.Now()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(v.o.Client.Timeout, 10*time.Second))
	go func() {
		defer cancel()
		v.fetch(rctx, done)
	}()
	return done
}

// fetch reads the key set, with v.mu not held, then puts it in use and
// closes done. On error, the keys read before stay in use.
func (v *Verifier) fetch(ctx context.Context, done chan struct{}) {
	b, err := v.read(ctx)
	var keys []jwkKey
	if err != nil {
		err = fmt.Errorf("jwt: reading the JWKS: %w", err)
	} else if keys, err = parseJWKS(b); err != nil {
		err = fmt.Errorf("jwt: %s: %w", v.o.JWKS, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	defer close(done)
	v.reading, v.lastErr = nil, err
	if err != nil {
		return
	}
	withdrawn := slices.ContainsFunc(v.keys, func(old jwkKey) bool {
		return !slices.ContainsFunc(keys, old.equal)
	})
	v.keys, v.fetched = keys, time.Now()
	if withdrawn {
		// A token verified with a key that has left the set is verified
		// again; a read that withdrew nothing (an unknown key id's, which
		// anyone can cause) keeps the tokens verified.
		v.cacheMu.Lock()
		v.cache = nil
		v.gen++ // and a verification under way must not store its token
		v.cacheMu.Unlock()
	}
}

// equal reports whether k and o are the same key under the same id.
func (k jwkKey) equal(o jwkKey) bool {
	if k.kid != o.kid || k.alg != o.alg {
		return false
	}
	if k.rsa != nil {
		return o.rsa != nil && k.rsa.Equal(o.rsa)
	}
	return k.ec != nil && o.ec != nil && k.ec.Equal(o.ec)
}

func (v *Verifier) read(ctx context.Context) ([]byte, error) {
	src := v.o.JWKS
	if !strings.HasPrefix(src, "https://") && !strings.HasPrefix(src, "http://") {
		f, err := os.Open(src)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readLimited(f)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.o.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", src, resp.Status)
	}
	return readLimited(resp.Body)
}

func readLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxJWKSBytes+1))
	if err == nil && len(b) > maxJWKSBytes {
		err = fmt.Errorf("larger than %d bytes", maxJWKSBytes)
	}
	return b, err
}

// parseJWKS reads the RS256 and ES256 (P-256) signing keys of a JSON Web
// Key Set. Keys of other types, for other uses or algorithms, and RSA keys
// under 2048 bits are left out; a set with no usable key is an error.
func parseJWKS(b []byte) ([]jwkKey, error) {
	var set struct {
		Keys []struct {
			Kty, Kid, Use, Alg, Crv, N, E, X, Y string
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JWKS: %w", err)
	}
	var out []jwkKey
	var skipped []string
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			if k.Alg != "" && k.Alg != "RS256" {
				continue
			}
			pub, err := rsaKey(k.N, k.E)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s: %v", k.Kid, err))
				continue
			}
			out = append(out, jwkKey{kid: k.Kid, alg: "RS256", rsa: pub})
		case "EC":
			if (k.Alg != "" && k.Alg != "ES256") || k.Crv != "P-256" {
				continue
			}
			pub, err := ecKey(k.X, k.Y)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s: %v", k.Kid, err))
				continue
			}
			out = append(out, jwkKey{kid: k.Kid, alg: "ES256", ec: pub})
		}
	}
	if len(out) == 0 {
		if len(skipped) > 0 {
			return nil, fmt.Errorf("no usable RS256 or ES256 key (%s)", strings.Join(skipped, "; "))
		}
		return nil, errors.New("no usable RS256 or ES256 key")
	}
	return out, nil
}

var b64 = base64.RawURLEncoding.Strict()

func rsaKey(n, e string) (*rsa.PublicKey, error) {
	nb, err := b64.DecodeString(n)
	if err != nil {
		return nil, fmt.Errorf("modulus: %w", err)
	}
	eb, err := b64.DecodeString(e)
	if err != nil || len(eb) == 0 || len(eb) > 4 {
		return nil, errors.New("malformed exponent")
	}
	var exp uint64
	for _, c := range eb {
		exp = exp<<8 | uint64(c)
	}
	if exp < 3 || exp%2 == 0 || exp > math.MaxInt32 {
		return nil, errors.New("unusable exponent")
	}
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(nb), E: int(exp)}
	if pub.N.BitLen() < 2048 {
		return nil, fmt.Errorf("a %d-bit modulus is too weak", pub.N.BitLen())
	}
	return pub, nil
}

func ecKey(x, y string) (*ecdsa.PublicKey, error) {
	xb, err1 := b64.DecodeString(x)
	yb, err2 := b64.DecodeString(y)
	if err1 != nil || err2 != nil || len(xb) != 32 || len(yb) != 32 {
		return nil, errors.New("malformed P-256 point")
	}
	pt := append(append([]byte{4}, xb...), yb...)
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pt)
	if err != nil {
		return nil, fmt.Errorf("not a P-256 point: %w", err)
	}
	return pub, nil
}

// keysFor returns the keys that may have signed a token. The key set is
// read again when it is older than MaxAge or has no key of the token's id
// (rotation), at most every MinRefresh, one read at a time. A token whose
// key is in hand, in keys not too old, never waits for a read: only one of
// an unknown key id (which anyone can send) waits, or one whose keys are
// older than MaxAge while reading the set works (if the last read failed,
// the keys in hand are used and the set read meanwhile).
func (v *Verifier) keysFor(ctx context.Context, kid, alg string) ([]jwkKey, error) {
	for waited := false; ; waited = true {
		v.mu.Lock()
		ks := v.match(kid, alg)
		stale := v.fetched.IsZero() || time.Since(v.fetched) >= v.o.MaxAge
		done := v.reading
		if done == nil && !waited && (stale || len(ks) == 0) && (v.lastTry.IsZero() || time.Since(v.lastTry) >= v.o.MinRefresh) {
			done = v.startRead(ctx)
		}
		wait := !waited && done != nil && (len(ks) == 0 || (stale && v.lastErr == nil))
		never, lastErr := v.fetched.IsZero(), v.lastErr
		v.mu.Unlock()
		if wait {
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		if len(ks) > 0 {
			return ks, nil
		}
		if never && lastErr != nil {
			return nil, lastErr
		}
		return nil, fmt.Errorf("%w: no %s key with id %q", ErrTokenInvalid, alg, kid)
	}
}

// match returns the keys of an algorithm and id (any id if kid is empty);
// v.mu is held.
func (v *Verifier) match(kid, alg string) []jwkKey {
	var out []jwkKey
	for _, k := range v.keys {
		if k.alg == alg && (kid == "" || k.kid == kid) {
			out = append(out, k)
		}
	}
	return out
}

// Verify checks a token's signature, expiry, not-before, issuer and
// audience, and returns its identity. Only RS256 and ES256 are accepted
// (never "none", never an HMAC).
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	sum := sha256.Sum256([]byte(token))
	v.cacheMu.Lock()
	c, ok := v.cache[sum]
	gen := v.gen
	v.cacheMu.Unlock()
	now := time.Now()
	if ok && now.Before(c.expires) && now.Sub(c.stored) < v.o.MaxAge {
		return cloneIdentity(c.id), nil
	}
	id, exp, err := v.verify(ctx, token)
	if err != nil {
		return nil, err
	}
	v.cacheMu.Lock()
	if v.gen == gen { // else the keys were read again meanwhile: verified against the old ones
		if v.cache == nil || len(v.cache) >= maxCachedTokens {
			v.cache = map[[32]byte]cachedToken{}
		}
		v.cache[sum] = cachedToken{id: cloneIdentity(id), expires: exp, stored: now}
	}
	v.cacheMu.Unlock()
	return id, nil
}

func cloneIdentity(id *Identity) *Identity {
	c := *id
	c.Roles = slices.Clone(id.Roles)
	c.Attributes = maps.Clone(id.Attributes)
	return &c
}

// verify checks a token and returns its identity and until when the
// answer holds (its expiry, with the leeway).
func (v *Verifier) verify(ctx context.Context, token string) (*Identity, time.Time, error) {
	h, claims, signed, sig, err := ParseJWT(token)
	if err != nil {
		return nil, time.Time{}, err
	}
	keys, err := v.keysFor(ctx, h.Kid, h.Alg)
	if err != nil {
		return nil, time.Time{}, err
	}
	digest := sha256.Sum256(signed)
	ok := false
	for _, k := range keys {
		if verifySig(k, digest[:], sig) {
			ok = true
			break
		}
	}
	if !ok {
		return nil, time.Time{}, fmt.Errorf("%w: bad signature", ErrTokenInvalid)
	}
	if err := v.checkClaims(claims); err != nil {
		return nil, time.Time{}, err
	}
	id, err := v.identity(claims, h.Kid)
	if err != nil {
		return nil, time.Time{}, err
	}
	exp, _, _ := numericDate(claims, "exp")
	return id, exp.Add(v.o.Leeway), nil
}

func verifySig(k jwkKey, digest, sig []byte) bool {
	switch k.alg {
	case "RS256":
		return rsa.VerifyPKCS1v15(k.rsa, crypto.SHA256, digest, sig) == nil
	case "ES256":
		if len(sig) != 64 {
			return false
		}
		r := new(big.Int).SetBytes(sig[:32])
		s := new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(k.ec, digest, r, s)
	}
	return false
}

// Header is the part of a JWT header that matters here.
type Header struct {
	Alg  string   `json:"alg"`
	Kid  string   `json:"kid"`
	Typ  string   `json:"typ"`
	Crit []string `json:"crit"`
}

// ParseJWT splits a compact JWS and decodes its header and claims without
// checking the signature: it returns the header, the claims, the signed
// bytes and the signature. It refuses algorithms other than RS256 and ES256,
// critical extensions, and anything malformed.
func ParseJWT(token string) (Header, map[string]any, []byte, []byte, error) {
	var h Header
	if len(token) > maxTokenBytes {
		return h, nil, nil, nil, fmt.Errorf("%w: longer than %d bytes", ErrTokenInvalid, maxTokenBytes)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return h, nil, nil, nil, fmt.Errorf("%w: not three dot-separated parts", ErrTokenInvalid)
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return h, nil, nil, nil, fmt.Errorf("%w: header: %v", ErrTokenInvalid, err)
	}
	if err := strictJSON(hb, &h); err != nil {
		return h, nil, nil, nil, fmt.Errorf("%w: header: %v", ErrTokenInvalid, err)
	}
	switch h.Alg {
	case "RS256", "ES256":
	default:
		return h, nil, nil, nil, fmt.Errorf("%w: algorithm %q is not accepted (RS256 or ES256)", ErrTokenInvalid, h.Alg)
	}
	if len(h.Crit) > 0 {
		return h, nil, nil, nil, fmt.Errorf("%w: critical extensions %q are not understood", ErrTokenInvalid, h.Crit)
	}
	pb, err := b64.DecodeString(parts[1])
	if err != nil {
		return h, nil, nil, nil, fmt.Errorf("%w: claims: %v", ErrTokenInvalid, err)
	}
	var claims map[string]any
	if err := strictJSON(pb, &claims); err != nil || claims == nil {
		return h, nil, nil, nil, fmt.Errorf("%w: claims are not a JSON object", ErrTokenInvalid)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || len(sig) == 0 {
		return h, nil, nil, nil, fmt.Errorf("%w: signature is malformed", ErrTokenInvalid)
	}
	return h, claims, []byte(token[:len(parts[0])+1+len(parts[1])]), sig, nil
}

// strictJSON decodes one JSON value with numbers kept exact, refusing
// trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

func (v *Verifier) checkClaims(c map[string]any) error {
	now := time.Now()
	exp, ok, err := numericDate(c, "exp")
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: no expiry (exp)", ErrTokenInvalid)
	case now.After(exp.Add(v.o.Leeway)):
		return fmt.Errorf("%w at %s", ErrTokenExpired, exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok, err := numericDate(c, "nbf"); err != nil {
		return err
	} else if ok && now.Add(v.o.Leeway).Before(nbf) {
		return fmt.Errorf("%w: not valid before %s", ErrTokenInvalid, nbf.UTC().Format(time.RFC3339))
	}
	if iat, ok, err := numericDate(c, "iat"); err != nil {
		return err
	} else if ok && now.Add(v.o.Leeway).Before(iat) {
		return fmt.Errorf("%w: issued in the future", ErrTokenInvalid)
	}
	if iss, _ := c["iss"].(string); iss != v.o.Issuer {
		return fmt.Errorf("%w: issuer %q is not %q", ErrTokenInvalid, iss, v.o.Issuer)
	}
	if v.o.Audience != "" {
		found := false
		switch aud := c["aud"].(type) {
		case string:
			found = aud == v.o.Audience
		case []any:
			for _, a := range aud {
				if s, _ := a.(string); s == v.o.Audience {
					found = true
				}
			}
		}
		if !found {
			return fmt.Errorf("%w: audience is not %q", ErrTokenInvalid, v.o.Audience)
		}
	}
	return nil
}

func numericDate(c map[string]any, name string) (time.Time, bool, error) {
	raw, ok := c[name]
	if !ok {
		return time.Time{}, false, nil
	}
	n, ok := raw.(json.Number)
	if !ok {
		return time.Time{}, false, fmt.Errorf("%w: %s is not a number", ErrTokenInvalid, name)
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < 0 || f > 1e11 {
		return time.Time{}, false, fmt.Errorf("%w: %s is out of range", ErrTokenInvalid, name)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}

// claim finds a claim: the one named path as it is, else by path read as
// dotted (realm_access.roles). A namespaced claim's name has dots of its
// own ("https://reach.example.com/tenant", as Auth0 requires custom
// claims): read only as a path, it was not found, and a token's tenant or
// roles taken as none.
func claim(c map[string]any, path string) (any, bool) {
	if v, ok := c[path]; ok {
		return v, true
	}
	return claimPath(c, path)
}

// claimPath finds a claim by path read as dotted only.
func claimPath(c map[string]any, path string) (any, bool) {
	var cur any = c
	for part := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// twoWays reports whether a token answers a dotted claim name two ways
// that differ: a claim of that name as it is ("realm_access.roles") and
// another at that path through objects (realm_access: {roles: ...}). The
// one by name would win, and a claim added beside the identity provider's
// own (null, or other roles) displace the one the configuration reads.
func twoWays(c map[string]any, path string) bool {
	if !strings.Contains(path, ".") {
		return false
	}
	byName, ok := c[path]
	if !ok {
		return false
	}
	byPath, ok := claimPath(c, path)
	return ok && !reflect.DeepEqual(byName, byPath)
}

func (v *Verifier) identity(c map[string]any, kid string) (*Identity, error) {
	id := &Identity{Method: "jwt", KeyID: kid}
	// A claim read two ways with two answers is refused, not decided by
	// which way is tried first: which one the identity provider meant is
	// not known.
	paths := []string{v.o.PrincipalClaim, v.o.RolesClaim, v.o.TenantClaim, v.o.DepartmentClaim}
	for _, name := range slices.Sorted(maps.Keys(v.o.Attributes)) {
		paths = append(paths, v.o.Attributes[name])
	}
	for _, path := range paths {
		if twoWays(c, path) {
			return nil, fmt.Errorf("%w: claim %q is both a claim of that name and, different, a claim at that path through objects; "+
				"the identity provider must give one of them", ErrTokenInvalid, path)
		}
	}
	p, _ := claim(c, v.o.PrincipalClaim)
	id.Principal, _ = p.(string)
	if id.Principal == "" || id.Principal == "anonymous" {
		return nil, fmt.Errorf("%w: no principal in claim %q", ErrTokenInvalid, v.o.PrincipalClaim)
	}
	if !shownAsIs(id.Principal) {
		// Shown to people: in an approval's prompt ("Asked by: ..."), which
		// may reach the user of a client, and in the UI, the audit log and
		// the logs. A right-to-left override or a line separator shows it,
		// and what follows it, as something else.
		return nil, fmt.Errorf("%w: claim %q (the principal) holds a control or format character (a right-to-left override, a zero-width space, a line separator), or is not UTF-8", ErrTokenInvalid, v.o.PrincipalClaim)
	}
	if id.Principal == LocalPrincipal {
		// An operator's API key may name it (to decide a stdio session's
		// approvals); a name at the identity provider may not: its holder
		// would own the local user's requests, approvals and results.
		return nil, fmt.Errorf("%w: claim %q names %q, who works without authentication (stdio, or a gateway without auth); "+
			"a token may not: an operator makes a key for it with reach keys create", ErrTokenInvalid, v.o.PrincipalClaim, LocalPrincipal)
	}
	// The roles, tenant and department a token carries are what policies
	// decide by (a forbid on a tenant or a role, too): one of another shape
	// than the configuration expects refuses the token, where it was left
	// out, and a forbid on it then never applied. Absent (or null), each
	// is none.
	switch r, _ := claim(c, v.o.RolesClaim); r := r.(type) {
	case nil:
	case string:
		id.Roles = strings.Fields(r)
	case []any:
		for _, x := range r {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("%w: claim %q (the roles) holds %s, not a string", ErrTokenInvalid, v.o.RolesClaim, jsonKind(x))
			}
			if s != "" {
				id.Roles = append(id.Roles, s)
			}
		}
	default:
		return nil, fmt.Errorf("%w: claim %q (the roles) is %s, not a string or an array of strings", ErrTokenInvalid, v.o.RolesClaim, jsonKind(r))
	}
	switch t, _ := claim(c, v.o.TenantClaim); t := t.(type) {
	case nil:
	case string:
		if !shownAsIs(t) {
			return nil, fmt.Errorf("%w: claim %q (the tenant) holds a control or format character, or is not UTF-8", ErrTokenInvalid, v.o.TenantClaim)
		}
		id.Tenant = t
	default:
		return nil, fmt.Errorf("%w: claim %q (the tenant) is %s, not a string", ErrTokenInvalid, v.o.TenantClaim, jsonKind(t))
	}
	attrs := map[string]string{}
	switch d, _ := claim(c, v.o.DepartmentClaim); d := d.(type) {
	case nil:
	case string:
		attrs["department"] = d
	default:
		return nil, fmt.Errorf("%w: claim %q (the department) is %s, not a string", ErrTokenInvalid, v.o.DepartmentClaim, jsonKind(d))
	}
	// An attribute is a string: a claim of another shape (an array of
	// groups) is refused as the roles' and the tenant's are, not left out,
	// where a forbid guarded with has never applied to its holder.
	for _, name := range slices.Sorted(maps.Keys(v.o.Attributes)) {
		path := v.o.Attributes[name]
		x, _ := claim(c, path)
		switch x := x.(type) {
		case nil:
		case string:
			attrs[name] = x
		case json.Number:
			attrs[name] = x.String()
		case bool:
			attrs[name] = fmt.Sprint(x)
		default:
			return nil, fmt.Errorf("%w: claim %q (the attribute %s) is %s, not a string, a number or a boolean", ErrTokenInvalid, path, name, jsonKind(x))
		}
	}
	if len(attrs) > 0 {
		id.Attributes = attrs
	}
	return id, nil
}

// jsonKind names the JSON type of a decoded claim, for an error.
func jsonKind(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", x)
}

// shownAsIs reports whether s is UTF-8 without control or format characters
// (a right-to-left override, a zero-width space) or line separators: what
// is shown to people as it is.
func shownAsIs(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
	})
}
