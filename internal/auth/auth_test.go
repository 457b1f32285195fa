package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentreach/reach"
)

func TestKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", KeysFile)
	keys, err := OpenKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	secret, key, err := keys.Create(KeySpec{Principal: "alice", Roles: []string{"support"}, Tenant: "acme",
		Attributes: map[string]string{"department": "sales"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, KeyPrefix) || len(secret) != len(KeyPrefix)+43 {
		t.Errorf("key %q", secret)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(secret, KeyPrefix))
	if strings.Contains(string(b), strings.TrimPrefix(secret, KeyPrefix)) || strings.Contains(string(b), string(raw)) {
		t.Error("the key itself is stored")
	}
	sum := sha256.Sum256(raw)
	if !strings.Contains(string(b), key.Hash) || key.Hash != string(hexOf(sum[:])) {
		t.Error("the stored hash is not the SHA-256 of the key")
	}
	id, ok := keys.Authenticate(secret)
	want := &Identity{Principal: "alice", Roles: []string{"support"}, Tenant: "acme",
		Attributes: map[string]string{"department": "sales"}, Method: "api_key", KeyID: key.ID}
	if !ok || !cmp.Equal(want, id) {
		t.Errorf("Authenticate: %v %+v", ok, id)
	}
	for _, bad := range []string{"", KeyPrefix, secret[:len(secret)-1], secret + "A", "xx_" + secret[3:],
		KeyPrefix + strings.Repeat("A", 43), secret[:len(secret)-1] + "="} {
		if _, ok := keys.Authenticate(bad); ok {
			t.Errorf("%q authenticated", bad)
		}
	}
	// Another process (another Keys on the same file) revokes it.
	other, err := OpenKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Revoke(key.ID); err != nil {
		t.Fatal(err)
	}
	if err := other.Revoke("key_nope"); !errors.Is(err, ErrNoKey) {
		t.Errorf("revoking an unknown key: %v", err)
	}
	keys.RecheckEvery = -1 // look at the file every time
	if _, ok := keys.Authenticate(secret); ok {
		t.Error("a revoked key authenticated")
	}
	list, _ := keys.List()
	if len(list) != 1 || list[0].Revoked == nil || keys.Len() != 0 {
		t.Errorf("list %+v", list)
	}
	if _, _, err := keys.Create(KeySpec{}); err == nil {
		t.Error("a key without a principal")
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// A key created by another process is seen within RecheckEvery.
func TestKeysFollowTheFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), KeysFile)
		gateway, _ := OpenKeys(path)
		cli, _ := OpenKeys(path)
		gateway.Authenticate("rk_x") // looked at the file just now
		secret, _, err := cli.Create(KeySpec{Principal: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if _, ok := gateway.Authenticate(secret); !ok {
			t.Error("a new key was not seen after RecheckEvery")
		}
	})
}

// --- JWT ---

type signer struct {
	kid string
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
}

func (s signer) alg() string {
	if s.rsa != nil {
		return "RS256"
	}
	return "ES256"
}

func (s signer) jwk() map[string]string {
	if s.rsa != nil {
		e := big.NewInt(int64(s.rsa.E)).Bytes()
		return map[string]string{"kty": "RSA", "kid": s.kid, "use": "sig", "alg": "RS256",
			"n": base64.RawURLEncoding.EncodeToString(s.rsa.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(e)}
	}
	pt, _ := s.ec.PublicKey.Bytes()
	return map[string]string{"kty": "EC", "kid": s.kid, "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(pt[1:33]), "y": base64.RawURLEncoding.EncodeToString(pt[33:])}
}

func jwks(ss ...signer) []byte {
	var keys []map[string]string
	for _, s := range ss {
		keys = append(keys, s.jwk())
	}
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

func enc(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// token signs claims with s under header h (alg and kid filled in if absent).
func (s signer) token(t testing.TB, h map[string]any, claims map[string]any) string {
	t.Helper()
	if h == nil {
		h = map[string]any{}
	}
	if _, ok := h["alg"]; !ok {
		h["alg"] = s.alg()
	}
	if _, ok := h["kid"]; !ok {
		h["kid"] = s.kid
	}
	signed := enc(h) + "." + enc(claims)
	d := sha256.Sum256([]byte(signed))
	var sig []byte
	if s.rsa != nil {
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, s.rsa, crypto.SHA256, d[:]); err != nil {
			t.Fatal(err)
		}
	} else {
		r, ss, err := ecdsa.Sign(rand.Reader, s.ec, d[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		ss.FillBytes(sig[32:])
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func newRSA(t testing.TB, kid string, bits int) signer {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, rsa: k}
}

func newEC(t testing.TB, kid string) signer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, ec: k}
}

const issuer = "https://idp.example/"

func claims(mod func(map[string]any)) map[string]any {
	now := time.Now().Unix()
	c := map[string]any{"iss": issuer, "aud": []string{"reach", "other"}, "sub": "alice", "exp": now + 300,
		"nbf": now - 10, "iat": now - 10, "roles": []string{"support", "reviewer"}, "tenant": "acme", "department": "sales"}
	if mod != nil {
		mod(c)
	}
	return c
}

func writeJWKS(t testing.TB, path string, ss ...signer) {
	t.Helper()
	if err := os.WriteFile(path, jwks(ss...), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestJWT(t *testing.T) {
	rs := newRSA(t, "rsa-1", 2048)
	es := newEC(t, "ec-1")
	mallory := newRSA(t, "rsa-1", 2048) // same kid, other key
	malloryEC := newEC(t, "ec-1")
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, rs, es)
	v, err := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, Audience: "reach"})
	if err != nil {
		t.Fatal(err)
	}
	pubDER := rs.rsa.PublicKey.N.Bytes()
	hs256 := func() string { // the classic confusion: HMAC keyed with the public key
		signed := enc(map[string]any{"alg": "HS256", "kid": "rsa-1"}) + "." + enc(claims(nil))
		m := hmac.New(sha256.New, pubDER)
		m.Write([]byte(signed))
		return signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	tamper := func(tok string) string { // claims swapped after signing
		p := strings.Split(tok, ".")
		p[1] = enc(claims(func(c map[string]any) { c["sub"] = "admin" }))
		return strings.Join(p, ".")
	}
	now := time.Now().Unix()
	tests := []struct {
		name  string
		token string
		want  error // nil: valid
	}{
		{"RS256", rs.token(t, nil, claims(nil)), nil},
		{"ES256", es.token(t, nil, claims(nil)), nil},
		{"audience as a string", rs.token(t, nil, claims(func(c map[string]any) { c["aud"] = "reach" })), nil},
		{"within the leeway", rs.token(t, nil, claims(func(c map[string]any) { c["exp"] = now - 5 })), nil},
		{"expired", rs.token(t, nil, claims(func(c map[string]any) { c["exp"] = now - 120 })), ErrTokenExpired},
		{"not yet valid", rs.token(t, nil, claims(func(c map[string]any) { c["nbf"] = now + 600 })), ErrTokenInvalid},
		{"issued in the future", es.token(t, nil, claims(func(c map[string]any) { c["iat"] = now + 600 })), ErrTokenInvalid},
		{"no expiry", rs.token(t, nil, claims(func(c map[string]any) { delete(c, "exp") })), ErrTokenInvalid},
		{"expiry not a number", rs.token(t, nil, claims(func(c map[string]any) { c["exp"] = "tomorrow" })), ErrTokenInvalid},
		{"wrong issuer", rs.token(t, nil, claims(func(c map[string]any) { c["iss"] = "https://evil/" })), ErrTokenInvalid},
		{"wrong audience", rs.token(t, nil, claims(func(c map[string]any) { c["aud"] = "other" })), ErrTokenInvalid},
		{"no audience", rs.token(t, nil, claims(func(c map[string]any) { delete(c, "aud") })), ErrTokenInvalid},
		{"no subject", rs.token(t, nil, claims(func(c map[string]any) { delete(c, "sub") })), ErrTokenInvalid},
		{"forged RS256", mallory.token(t, nil, claims(nil)), ErrTokenInvalid},
		{"forged ES256", malloryEC.token(t, nil, claims(nil)), ErrTokenInvalid},
		{"tampered claims", tamper(rs.token(t, nil, claims(nil))), ErrTokenInvalid},
		{"alg none", enc(map[string]any{"alg": "none"}) + "." + enc(claims(nil)) + ".", ErrTokenInvalid},
		{"alg none with a signature", enc(map[string]any{"alg": "none"}) + "." + enc(claims(nil)) + ".c2ln", ErrTokenInvalid},
		{"HS256 with the public key", hs256(), ErrTokenInvalid},
		{"RS256 header on an EC key id", es.token(t, map[string]any{"alg": "RS256"}, claims(nil)), ErrTokenInvalid},
		{"unknown key id", rs.token(t, map[string]any{"kid": "nope"}, claims(nil)), ErrTokenInvalid},
		{"critical extension", rs.token(t, map[string]any{"crit": []string{"exp"}}, claims(nil)), ErrTokenInvalid},
		{"two parts", "a.b", ErrTokenInvalid},
		{"padded base64", strings.Replace(rs.token(t, nil, claims(nil)), ".", "=.", 1), ErrTokenInvalid},
		{"empty", "", ErrTokenInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := v.Verify(t.Context(), tt.token)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want valid", err)
				}
				want := &Identity{Principal: "alice", Roles: []string{"support", "reviewer"}, Tenant: "acme",
					Attributes: map[string]string{"department": "sales"}, Method: "jwt", KeyID: id.KeyID}
				if diff := cmp.Diff(want, id); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("got %v (identity %+v), want %v", err, id, tt.want)
			}
		})
	}
}

func TestJWTClaimMapping(t *testing.T) {
	rs := newRSA(t, "k", 2048)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, rs)
	v, _ := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, PrincipalClaim: "email", RolesClaim: "realm_access.roles",
		TenantClaim: "org", DepartmentClaim: "dept", Attributes: map[string]string{"level": "lvl"}})
	tok := rs.token(t, map[string]any{"kid": ""}, map[string]any{"iss": issuer, "exp": time.Now().Unix() + 60,
		"email": "bob@example.com", "realm_access": map[string]any{"roles": []string{"ops"}}, "org": "acme", "dept": "it", "lvl": 3})
	id, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := &Identity{Principal: "bob@example.com", Roles: []string{"ops"}, Tenant: "acme",
		Attributes: map[string]string{"department": "it", "level": "3"}, Method: "jwt"}
	if diff := cmp.Diff(want, id); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	v2, _ := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, RolesClaim: "scope"})
	id, err = v2.Verify(t.Context(), rs.token(t, nil, map[string]any{"iss": issuer, "exp": time.Now().Unix() + 60, "sub": "x", "scope": "read write"}))
	if err != nil || !cmp.Equal(id.Roles, []string{"read", "write"}) {
		t.Errorf("space-separated roles: %v %+v", err, id)
	}
}

// Key rotation: an unknown key id reads the JWKS again, at most every
// MinRefresh.
func TestJWTKeyRotation(t *testing.T) {
	old, next := newEC(t, "2025"), newRSA(t, "2026", 2048)
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "jwks.json")
		writeJWKS(t, path, old)
		v, _ := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, MinRefresh: 10 * time.Second})
		c := map[string]any{"iss": issuer, "sub": "alice", "exp": time.Now().Unix() + 3600}
		if _, err := v.Verify(t.Context(), old.token(t, nil, c)); err != nil {
			t.Fatal(err)
		}
		writeJWKS(t, path, old, next)
		time.Sleep(10 * time.Second)
		if _, err := v.Verify(t.Context(), next.token(t, nil, c)); err != nil {
			t.Fatalf("after rotation: %v", err)
		}
		// Unknown ids do not make it read the set on every token.
		writeJWKS(t, path, next)
		if _, err := v.Verify(t.Context(), next.token(t, map[string]any{"kid": "junk"}, c)); err == nil {
			t.Fatal("unknown kid accepted")
		}
		if _, err := v.Verify(t.Context(), old.token(t, nil, c)); err != nil {
			t.Errorf("the keys in use were dropped before MinRefresh: %v", err)
		}
	})
}

func TestJWKSOverHTTP(t *testing.T) {
	rs := newRSA(t, "k1", 2048)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(jwks(rs)) }))
	defer srv.Close()
	v, _ := NewVerifier(&JWTOptions{JWKS: srv.URL, Issuer: issuer, Client: srv.Client()})
	if err := v.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), rs.token(t, nil, claims(nil))); err != nil {
		t.Error(err)
	}
}

func TestJWKSRejectsWeakKeys(t *testing.T) {
	weak := newRSA(t, "weak", 1024)
	if _, err := parseJWKS(jwks(weak)); err == nil || !strings.Contains(err.Error(), "too weak") {
		t.Errorf("1024-bit key: %v", err)
	}
	for _, bad := range []string{`{}`, `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`, `{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`, `nope`} {
		if _, err := parseJWKS([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func FuzzParseJWT(f *testing.F) {
	rs := newRSA(f, "k", 2048)
	f.Add(rs.token(f, nil, claims(nil)))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("..")
	f.Add("eyJhbGciOiJSUzI1NiIsImNyaXQiOlsieCJdfQ.e30.AA")
	f.Fuzz(func(t *testing.T, tok string) {
		h, c, signed, sig, err := ParseJWT(tok)
		if err != nil {
			if !errors.Is(err, ErrTokenInvalid) {
				t.Fatalf("error %v does not match ErrTokenInvalid", err)
			}
			return
		}
		if h.Alg != "RS256" && h.Alg != "ES256" {
			t.Fatalf("algorithm %q accepted", h.Alg)
		}
		if c == nil || len(sig) == 0 || !strings.HasPrefix(tok, string(signed)+".") {
			t.Fatalf("parts: %v %q %q", c, signed, sig)
		}
	})
}

// --- middleware ---

func TestMiddleware(t *testing.T) {
	keys, _ := OpenKeys(filepath.Join(t.TempDir(), KeysFile))
	secret, _, _ := keys.Create(KeySpec{Principal: "alice", Roles: []string{"support"}})
	rs := newRSA(t, "k", 2048)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, rs)
	v, _ := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := IdentityFrom(r.Context())
		if !ok {
			w.Write([]byte("anonymous"))
			return
		}
		var o reach.RequestOptions
		id.Apply(&o)
		w.Write([]byte(o.Principal + " " + id.Method))
	})
	h := New(&Options{Keys: keys, JWT: v}).Middleware(next)
	tests := []struct {
		name, path, header, value string
		status                    int
		body                      string
	}{
		{"health is open", "/healthz", "", "", 200, "anonymous"},
		{"nothing", "/v1/calls", "", "", 401, "needs credentials"},
		{"api key as bearer", "/v1/calls", "Authorization", "Bearer " + secret, 200, "alice api_key"},
		{"api key header", "/mcp", "X-Reach-Key", secret, 200, "alice api_key"},
		{"wrong api key", "/mcp", "X-Reach-Key", secret[:len(secret)-2] + "AA", 401, "unknown or revoked"},
		{"jwt", "/v1/approvals", "Authorization", "Bearer " + rs.token(t, nil, claims(nil)), 200, "alice jwt"},
		{"expired jwt", "/v1/approvals", "Authorization", "Bearer " + rs.token(t, nil, claims(func(c map[string]any) { c["exp"] = 1 })), 401, "expired"},
		{"basic auth", "/v1/calls", "Authorization", "Basic YTpi", 401, "needs credentials"},
		{"health with a path below", "/healthz/x", "", "", 401, "needs credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.path, nil)
			if tt.header != "" {
				r.Header.Set(tt.header, tt.value)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.status || !strings.Contains(w.Body.String(), tt.body) {
				t.Errorf("got %d %s, want %d with %q", w.Code, w.Body, tt.status, tt.body)
			}
			if w.Code == 401 {
				var e struct {
					Error struct{ Code, Message string }
				}
				if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error.Code != "unauthenticated" || w.Header().Get("WWW-Authenticate") == "" {
					t.Errorf("401 body %s, headers %v", w.Body, w.Header())
				}
			}
		})
	}
	// The suggestion names only what the gateway takes.
	for _, c := range []struct {
		name      string
		opts      *Options
		want, not string
	}{
		{"keys only", &Options{Keys: keys}, "reach keys create", "JWT"},
		{"jwt only", &Options{JWT: v}, "bearer JWT", "rk_"},
		{"both", &Options{Keys: keys, JWT: v}, "API key (Authorization: Bearer rk_... or X-Reach-Key: rk_...) or a bearer JWT", ""},
	} {
		for _, hdr := range []string{"", "Bearer nonsense"} {
			r := httptest.NewRequest("GET", "/v1/calls", nil)
			if hdr != "" {
				r.Header.Set("Authorization", hdr)
			}
			w := httptest.NewRecorder()
			New(c.opts).Middleware(next).ServeHTTP(w, r)
			var e struct{ Error struct{ Suggestion string } }
			json.Unmarshal(w.Body.Bytes(), &e)
			if s := e.Error.Suggestion; w.Code != 401 || !strings.Contains(s, c.want) || c.not != "" && strings.Contains(s, c.not) {
				t.Errorf("%s, %q: %d, suggestion %q; want 401 with %q and without %q", c.name, hdr, w.Code, s, c.want, c.not)
			}
		}
	}
	// Without authentication configured, everything passes.
	w := httptest.NewRecorder()
	New(nil).Middleware(next).ServeHTTP(w, httptest.NewRequest("GET", "/v1/calls", nil))
	if w.Code != 200 || w.Body.String() != "anonymous" {
		t.Errorf("no auth: %d %s", w.Code, w.Body)
	}
}

// BenchmarkAuthenticate: what the middleware spends per request.
func BenchmarkAuthenticate(b *testing.B) {
	keys, _ := OpenKeys(filepath.Join(b.TempDir(), KeysFile))
	secret, _, _ := keys.Create(KeySpec{Principal: "alice", Roles: []string{"support"}})
	b.Run("api key", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := keys.Authenticate(secret); !ok {
				b.Fatal("rejected")
			}
		}
	})
	path := filepath.Join(b.TempDir(), "jwks.json")
	rs, es := newRSA(b, "rs", 2048), newEC(b, "es")
	writeJWKS(b, path, rs, es)
	v, _ := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, Audience: "reach"})
	for _, s := range []signer{rs, es} {
		tok := s.token(b, nil, claims(nil))
		b.Run("jwt "+s.alg(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(context.Background(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A verified token is remembered only until it expires.
func TestJWTCacheExpires(t *testing.T) {
	rs := newRSA(t, "k", 2048)
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "jwks.json")
		writeJWKS(t, path, rs)
		v, _ := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, Leeway: 5 * time.Second})
		tok := rs.token(t, nil, map[string]any{"iss": issuer, "sub": "alice", "exp": time.Now().Unix() + 60})
		for range 2 {
			if _, err := v.Verify(t.Context(), tok); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(66 * time.Second)
		if _, err := v.Verify(t.Context(), tok); !errors.Is(err, ErrTokenExpired) {
			t.Errorf("after expiry: %v", err)
		}
	})
}

// TestJWTCachedTokenOutlivesNoKey: a token verified and cached while its
// key was in the JWKS is refused once the key has left the set and MaxAge
// has passed, even if only cached tokens arrive meanwhile.
func TestJWTCachedTokenOutlivesNoKey(t *testing.T) {
	k1, k2 := newRSA(t, "k1", 2048), newRSA(t, "k2", 2048)
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "jwks.json")
		writeJWKS(t, path, k1, k2)
		v, _ := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, MaxAge: time.Hour, MinRefresh: time.Second})
		tok := k1.token(t, nil, map[string]any{"iss": issuer, "sub": "alice", "exp": time.Now().Unix() + 6*3600})
		if _, err := v.Verify(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
		writeJWKS(t, path, k2) // k1 withdrawn
		for range 3 {
			time.Sleep(time.Hour)
			if _, err := v.Verify(t.Context(), tok); err == nil {
				t.Fatal("an hour after k1 left the JWKS (MaxAge 1h), a cached token signed by k1 still verifies")
			}
		}
	})
}

// TestCredential: the login form's check takes a key or a JWT; a JWT's
// identity holds until its expiry, a key's until it is revoked (Valid).
func TestCredential(t *testing.T) {
	rs := newRSA(t, "rsa-1", 2048)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, rs)
	v, err := NewVerifier(&JWTOptions{JWKS: path, Issuer: issuer, Audience: "reach"})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := OpenKeys(filepath.Join(t.TempDir(), "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	secret, key, err := keys.Create(KeySpec{Principal: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	a := New(&Options{Keys: keys, JWT: v})
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	id, until, err := a.Credential(t.Context(), rs.token(t, nil, claims(func(c map[string]any) { c["exp"] = exp.Unix() })))
	if err != nil || id.Principal != "alice" || !until.Equal(exp) || !a.Valid(id) {
		t.Errorf("a JWT: %+v until %v (%v), want alice until %v", id, until, err, exp)
	}
	id, until, err = a.Credential(t.Context(), secret)
	if err != nil || id.Principal != "bob" || !until.IsZero() || !a.Valid(id) {
		t.Fatalf("a key: %+v until %v (%v)", id, until, err)
	}
	if _, _, err := a.Credential(t.Context(), "rk_nope"); !errors.Is(err, ErrBadKey) {
		t.Errorf("an unknown key: %v", err)
	}
	if err := keys.Revoke(key.ID); err != nil {
		t.Fatal(err)
	}
	if a.Valid(id) {
		t.Error("a revoked key's identity is still valid")
	}
}
