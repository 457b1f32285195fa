package idempotency

import "testing"

// TestKeptBounds: completions are kept up to the count and the bytes
// given; past them Keep says no, and a dropped one makes room again.
func TestKeptBounds(t *testing.T) {
	k := NewKept(2, 10)
	if !k.Keep("a", KeptEntry{Result: []byte("12345")}) || !k.Keep("b", KeptEntry{}) {
		t.Fatal("the first two completions were not kept")
	}
	if k.Keep("c", KeptEntry{}) {
		t.Fatal("a third completion was kept past a bound of two")
	}
	if k.Keep("a", KeptEntry{Result: []byte("12345678901")}) {
		t.Fatal("a result of 11 bytes was kept past a bound of 10")
	}
	if e, ok := k.Get("a"); !ok || string(e.Result) != "12345" {
		t.Fatalf("a is %q, %v after a refused replace; want the first result kept", e.Result, ok)
	}
	k.Drop("a")
	if k.Len() != 1 || !k.Keep("c", KeptEntry{Result: []byte("1234567890")}) {
		t.Fatalf("after a drop: %d kept, and c not kept; want room for c", k.Len())
	}
	if _, ok := k.Get("a"); ok {
		t.Fatal("a dropped completion is still kept")
	}
}
