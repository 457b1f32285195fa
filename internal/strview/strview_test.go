package strview

import "testing"

// Of reads what b holds, empty and nil included, without a copy.
func TestOf(t *testing.T) {
	b := []byte("hello")
	s := Of(b)
	if s != "hello" {
		t.Fatalf("Of(%q) = %q", b, s)
	}
	b[0] = 'j' // a view, not a copy: what the caller promises not to do
	if s != "jello" {
		t.Errorf("Of copied its bytes: %q after b changed", s)
	}
	if Of(nil) != "" || Of([]byte{}) != "" {
		t.Error("Of of no bytes is not empty")
	}
	if n := testing.AllocsPerRun(100, func() { _ = Of(b) }); n != 0 {
		t.Errorf("Of allocates %v times", n)
	}
}

func TestIs(t *testing.T) {
	b := []byte("hello world")
	if !Is(Of(b), b) || !Is(Of(b[6:]), b[6:]) {
		t.Error("a view of b is not one")
	}
	if Is(string(b), b) || Is(Of(b[:5]), b) || Is(Of(b[1:6]), b[:5]) || Is("", b[:0]) {
		t.Error("a copy, a shorter view or another part of b is a view of b")
	}
}
