package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A plain http key set off loopback is refused when the verifier is made:
// anyone on the way between the gateway and that host could hand it keys
// and sign tokens for any principal. On loopback (the machine itself) and
// over https it is taken, as a file is.
func TestAttack26JWKSPlainHTTPOffLoopback(t *testing.T) {
	for _, src := range []string{"http://idp.example/jwks.json", "http://10.0.0.7:8080/jwks.json", "http://[2001:db8::1]/jwks.json",
		"http://user:pw@idp.example/jwks.json"} {
		_, err := NewVerifier(&JWTOptions{JWKS: src, Issuer: issuer})
		if err == nil || !strings.Contains(err.Error(), "https://") || !strings.Contains(err.Error(), "not loopback") {
			t.Errorf("JWKS %s: %v, want a refusal saying to use https://", src, err)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("JWKS %s: the refusal quotes the URL's password: %v", src, err)
		}
	}
	for _, src := range []string{"https://idp.example/jwks.json", "http://127.0.0.1:9/jwks.json", "http://localhost:9/jwks.json",
		"http://[::1]:9/jwks.json", "jwks.json"} {
		if _, err := NewVerifier(&JWTOptions{JWKS: src, Issuer: issuer}); err != nil {
			t.Errorf("JWKS %s: %v", src, err)
		}
	}
}

// A key set read over https that redirects to plain http is not read: the
// redirect (or whoever answers at its plain http host) would choose the
// keys. Before, the client followed it, and a token signed with the keys
// at the http address authenticated.
func TestAttack26JWKSRedirectToPlainHTTP(t *testing.T) {
	forger := newRSA(t, "k1", 2048)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(jwks(forger)) }))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/jwks.json", http.StatusFound)
	}))
	defer tlsSrv.Close()
	v, err := NewVerifier(&JWTOptions{JWKS: tlsSrv.URL + "/jwks.json", Issuer: issuer, Client: tlsSrv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Refresh(t.Context()); err == nil || !strings.Contains(err.Error(), "https only") {
		t.Errorf("Refresh after a redirect to %s: %v, want a refusal of the redirect", plain.URL, err)
	}
	if id, err := v.Verify(t.Context(), forger.token(t, nil, claims(nil))); err == nil {
		t.Errorf("a token signed with the keys behind the redirect authenticated %+v", id)
	}
	if tlsSrv.Client().CheckRedirect != nil {
		t.Error("the caller's client was changed")
	}

	// A redirect within https is followed, as before.
	good := newRSA(t, "k2", 2048)
	keysSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(jwks(good)) }))
	defer keysSrv.Close()
	moved := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, keysSrv.URL+"/jwks.json", http.StatusMovedPermanently)
	}))
	moved.TLS = keysSrv.TLS
	moved.StartTLS()
	defer moved.Close()
	v, _ = NewVerifier(&JWTOptions{JWKS: moved.URL + "/jwks.json", Issuer: issuer, Client: keysSrv.Client()})
	if _, err := v.Verify(t.Context(), good.token(t, nil, claims(nil))); err != nil {
		t.Errorf("after a redirect within https: %v", err)
	}

	// The client's own redirect check still runs.
	own := errors.New("no redirects here")
	c := *tlsSrv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return own }
	v, _ = NewVerifier(&JWTOptions{JWKS: moved.URL + "/jwks.json", Issuer: issuer, Client: &c})
	if err := v.Refresh(t.Context()); !errors.Is(err, own) {
		t.Errorf("with the client's own CheckRedirect: %v, want its error", err)
	}
}

// FuzzParseJWKS: a key set (read from a URL or a file) never panics the
// parser, and what it keeps is only what Verify may use: RS256 keys of at
// least 2048 bits with an odd exponent, ES256 keys on P-256; a set it
// keeps nothing of is an error.
func FuzzParseJWKS(f *testing.F) {
	f.Add(jwks(newRSA(f, "r", 2048), newEC(f, "e")))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"","y":""},null,{"kty":"oct","k":"c2VjcmV0"}]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := parseJWKS(b)
		if err != nil {
			if len(keys) != 0 {
				t.Fatalf("an error (%v) with %d keys", err, len(keys))
			}
			return
		}
		if len(keys) == 0 {
			t.Fatal("no key and no error")
		}
		for _, k := range keys {
			switch k.alg {
			case "RS256":
				if k.rsa == nil || k.rsa.N.BitLen() < 2048 || k.rsa.E < 3 || k.rsa.E%2 == 0 {
					t.Fatalf("RSA key %q kept: %+v", k.kid, k.rsa)
				}
			case "ES256":
				if k.ec == nil || k.ec.Curve.Params().Name != "P-256" {
					t.Fatalf("EC key %q kept: %+v", k.kid, k.ec)
				}
			default:
				t.Fatalf("a key of algorithm %q kept", k.alg)
			}
		}
	})
}

// A key's principal or tenant with a control or format character is
// refused, as a JWT's is: shown as it is, a pasted zero-width space made
// another principal that looks the same.
func TestAttack26KeyNamesShownAsIs(t *testing.T) {
	keys, err := OpenKeys(t.TempDir() + "/" + KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []KeySpec{{Principal: "alice\u200b"}, {Principal: "ali\u202ece"}, {Principal: "alice\n"}, {Principal: "alice", Tenant: "acme\u2028"}, {Principal: "\xffalice"}} {
		if _, _, err := keys.Create(spec); err == nil || !strings.Contains(err.Error(), "control or format character") {
			t.Errorf("%+q: %v, want a refusal", spec, err)
		}
	}
	if _, _, err := keys.Create(KeySpec{Principal: "Zoë", Tenant: "Åcme"}); err != nil {
		t.Error(err)
	}
	if n := keys.Len(); n != 1 {
		t.Errorf("%d keys kept, want 1", n)
	}
}
