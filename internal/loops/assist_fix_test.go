package loops

import "testing"

// The assistants probe's fixes, each tested on its own.

// TestStartsIn: a span after "in" and a verb of what is to come ("starts
// in 9m", "Retrying in 30s") is a time to go, which moving is news; after
// a past or a count ("passed in 350ms", "Ran 12 tests in 0.41s") it is a
// time taken, masked.
func TestStartsIn(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"window dp-7: maintenance opens in 40m", "window dp-7: maintenance opens in 31m", false},
		{"upstream busy, Retrying in 30s", "upstream busy, Retrying in 20s", false},
		{"session token expires in 5m", "session token expires in 4m", false},
		{"rate limited; try again in 2m", "rate limited; try again in 1m", false},
		{"=== 4 passed in 350ms ===", "=== 4 passed in 410ms ===", true},
		{"Ran 12 tests in 0.41s\nOK", "Ran 12 tests in 0.39s\nOK", true},
		{"Done in 3.2s, 4 files", "Done in 2.9s, 4 files", true},
	} {
		if got := maskedHash([]byte(c.a)) == maskedHash([]byte(c.b)); got != c.same {
			t.Errorf("%q and %q: same %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
