package crashpoint

import "testing"

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		name string
		nth  int64
	}{
		{"", "", 1},
		{"executing", "executing", 1},
		{"ended#2", "ended", 2},
		{"ended#0", "ended", 1},
		{"ended#x", "ended", 1},
	} {
		if name, nth := parse(tt.in); name != tt.name || nth != tt.nth {
			t.Errorf("parse(%q) = %q, %d; want %q, %d", tt.in, name, nth, tt.name, tt.nth)
		}
	}
}

// Unarmed, or armed elsewhere, Reached returns and counts nothing.
func TestReachedElsewhere(t *testing.T) {
	point, nth = "ended", 1
	defer func() { point, nth = parse("") }()
	Reached("claimed")
	Reached("executing")
	if n := seen.Load(); n != 0 {
		t.Errorf("points not armed were counted: %d", n)
	}
}

// BenchmarkReachedUnarmed is what a point costs on the call path when no
// test armed one: production's case.
func BenchmarkReachedUnarmed(b *testing.B) {
	for b.Loop() {
		Reached("commit")
	}
}
