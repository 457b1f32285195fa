package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowJWKS serves a key set over a transport of its own: the first read
// answers at once, the next ones wait until released.
type slowJWKS struct {
	mu      sync.Mutex
	set     []byte
	reads   atomic.Int32
	entered chan struct{} // a read after the first has begun
	release chan struct{}
	once    sync.Once
}

func (s *slowJWKS) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.reads.Add(1) > 1 {
		s.entered <- struct{}{}
		select {
		case <-s.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	s.mu.Lock()
	body := bytes.Clone(s.set)
	s.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
}

func (s *slowJWKS) free() { s.once.Do(func() { close(s.release) }) }

// TestAttack38bUnknownKidDoesNotStallOthers: a token with an unknown key
// id makes the verifier read the key set again. The read was made holding
// the verifier's lock, so while the key-set server was slow every new
// token waited, whatever its key; and the read emptied the verified
// tokens, so every one was checked again. Anyone can send such a token,
// before being authenticated. Now a token whose key is in hand is verified
// while the read goes on, a second unknown id starts no second read, and a
// read that withdrew no key keeps the verified tokens; one that withdrew a
// key still drops them.
func TestAttack38bUnknownKidDoesNotStallOthers(t *testing.T) {
	k := newRSA(t, "k", 2048)
	src := &slowJWKS{set: jwks(k), entered: make(chan struct{}, 4), release: make(chan struct{})}
	defer src.free()
	v, err := NewVerifier(&JWTOptions{JWKS: "http://127.0.0.1:1/jwks.json", Issuer: issuer, MinRefresh: time.Nanosecond,
		Client: &http.Client{Transport: src}})
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]any{"iss": issuer, "sub": "alice", "exp": time.Now().Unix() + 3600}
	first := k.token(t, nil, c)
	if _, err := v.Verify(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	gen := v.gen

	unknown := make(chan error, 1)
	go func() {
		_, err := v.Verify(t.Context(), k.token(t, map[string]any{"kid": "nobody"}, c))
		unknown <- err
	}()
	<-src.entered // the read the unknown id caused is under way, and stays so

	// Should the verifier wait for that read, the test would hang: it is
	// released (and the test fails) if the token below is not verified by
	// then.
	var freedFirst atomic.Bool
	verified := make(chan struct{})
	go func() {
		select {
		case <-verified:
		case <-time.After(20 * time.Second):
			freedFirst.Store(true)
			src.free()
		}
	}()
	other := k.token(t, nil, map[string]any{"iss": issuer, "sub": "bob", "exp": time.Now().Unix() + 3600})
	id, err := v.Verify(t.Context(), other)
	close(verified)
	if err != nil || id.Principal != "bob" {
		t.Fatalf("a token of a known key while the key set is read: %+v, %v", id, err)
	}
	if freedFirst.Load() {
		t.Fatal("a token of a known key waited for the read of the key set an unknown key id caused")
	}
	// Another unknown id while the read goes on starts no second read.
	wait := make(chan error, 1)
	go func() {
		_, err := v.Verify(t.Context(), k.token(t, map[string]any{"kid": "nobody-either"}, c))
		wait <- err
	}()
	src.free()
	if err := <-unknown; err == nil {
		t.Error("a token of an unknown key id was accepted")
	}
	if err := <-wait; err == nil {
		t.Error("a second token of an unknown key id was accepted")
	}
	if n := src.reads.Load(); n > 3 {
		t.Errorf("%d reads of the key set, want at most 3 (the first, the unknown id's, and one after it for the second)", n)
	}

	// The read brought nothing new: the tokens verified stay so.
	v.cacheMu.Lock()
	n, g := len(v.cache), v.gen
	v.cacheMu.Unlock()
	if n != 2 || g != gen {
		t.Errorf("after a read that withdrew no key: %d tokens cached (want 2), key set generation %d (want %d)", n, g, gen)
	}

	// A read that withdraws the key drops them, and the token is refused.
	k2 := newRSA(t, "k2", 2048)
	src.mu.Lock()
	src.set = jwks(k2)
	src.mu.Unlock()
	if _, err := v.Verify(t.Context(), k2.token(t, nil, c)); err != nil {
		t.Fatalf("a token of the key that replaced the first: %v", err)
	}
	v.cacheMu.Lock()
	_, still := v.cache[sha256.Sum256([]byte(first))]
	v.cacheMu.Unlock()
	if still {
		t.Error("a token verified with a key withdrawn from the set is still cached")
	}
	if _, err := v.Verify(t.Context(), first); err == nil {
		t.Error("a token of a key withdrawn from the set still verifies")
	}
}

// TestAttack38bHungUpReadStillServes: the read of the key set is not the
// request's that started it: the client that sent an unknown key id and
// hung up does not cancel it, which would leave a key just rotated in
// unread until MinRefresh has passed.
func TestAttack38bHungUpReadStillServes(t *testing.T) {
	k, next := newRSA(t, "k", 2048), newEC(t, "next")
	src := &slowJWKS{set: jwks(k), entered: make(chan struct{}, 4), release: make(chan struct{})}
	defer src.free()
	v, err := NewVerifier(&JWTOptions{JWKS: "http://127.0.0.1:1/jwks.json", Issuer: issuer, MinRefresh: time.Hour,
		Client: &http.Client{Transport: src}})
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]any{"iss": issuer, "sub": "alice", "exp": time.Now().Unix() + 3600}
	if _, err := v.Verify(t.Context(), k.token(t, nil, c)); err != nil {
		t.Fatal(err)
	}
	// MinRefresh has passed since that read, as far as the verifier knows.
	v.mu.Lock()
	v.lastTry = time.Time{}
	v.mu.Unlock()
	src.mu.Lock()
	src.set = jwks(k, next)
	src.mu.Unlock()

	cctx, cancel := context.WithCancel(t.Context())
	gone := make(chan error, 1)
	go func() {
		_, err := v.Verify(cctx, next.token(t, nil, c))
		gone <- err
	}()
	<-src.entered
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("a request whose client hung up was verified")
	}
	done := make(chan error, 1)
	go func() {
		_, err := v.Verify(t.Context(), next.token(t, nil, c))
		done <- err
	}()
	src.free()
	if err := <-done; err != nil {
		t.Errorf("a token of the key just rotated in, after the request that read it hung up: %v", err)
	}
}
