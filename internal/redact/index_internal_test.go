package redact

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIndexFindsWhatEachFormsScanFinds: a set's index masks, its quick
// test lets through, and a stream holds back, what a scan for each form in
// turn does, on texts made of pieces of the forms (whole, cut, repeated,
// overlapping) and noise.
func TestIndexFindsWhatEachFormsScanFinds(t *testing.T) {
	secrets := []string{"s3cr3tVALUE42", `tok"with\quote`, "sk/live-7Hq2x9Zr", "98765432", "abcd1234", "abcd1234efgh5678",
		"pä$$wörd-ünï", "k<ey>&val-99", "aaaaaaaaaaaaaaaa", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	r, err := New(&Options{Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	indexed := r.secrets.Load()
	if indexed.idx == nil {
		t.Fatal("no index for 10 values")
	}
	plain := newSecretSet(indexed.secs)
	plain.idx = nil
	plainR := &Redactor{keys: r.keys}
	plainR.secrets.Store(plain)
	var pieces [][]byte
	for _, s := range indexed.secs {
		pieces = append(pieces, s.forms...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b []byte
		for range rng.IntN(8) {
			p := pieces[rng.IntN(len(pieces))]
			switch rng.IntN(4) {
			case 0:
				b = append(b, p...)
			case 1:
				b = append(b, p[:rng.IntN(len(p))]...)
			case 2:
				b = append(b, p[rng.IntN(len(p)):]...)
			default:
				b = append(b, " \n\\\"ab=%2F"[rng.IntN(10):]...)
			}
		}
		want := merge(valueEdits(nil, b, plain, true))
		got := merge(valueEdits(nil, b, indexed, true))
		if !slices.EqualFunc(got, want, func(x, y edit) bool { return x.from == y.from && x.to == y.to }) {
			t.Fatalf("%q: indexed %v, each form %v", b, got, want)
		}
		if len(want) > 0 && !r.mayMask(b, indexed, false) {
			t.Fatalf("%q: masked, and the quick test says nothing may be", b)
		}
		// A stream holds back, and passes on, what it would without.
		a, z := r.Stream(), plainR.Stream()
		for len(b) > 0 {
			n := min(len(b), 1+rng.IntN(12))
			if got, want := a.Next(string(b[:n])), z.Next(string(b[:n])); got != want {
				t.Fatalf("piece %q: indexed stream passed %q, without %q", b[:n], got, want)
			}
			b = b[n:]
		}
		if got, want := a.Flush(), z.Flush(); got != want {
			t.Fatalf("indexed stream flushed %q, without %q", got, want)
		}
	}
}
