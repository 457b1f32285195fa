package enumtext

import "testing"

type color int32

var colors = []string{"red", "green"}

func TestNameAndParse(t *testing.T) {
	for i, n := range colors {
		if got := Name(colors, color(i)); got != n {
			t.Errorf("Name(%d) = %q, want %q", i, got, n)
		}
		v, err := Parse[color](colors, []byte(n), "color")
		if err != nil || v != color(i) {
			t.Errorf("Parse(%q) = %d, %v; want %d", n, v, err, i)
		}
	}
	for _, v := range []color{-1, 2} {
		if got := Name(colors, v); got != "unknown" {
			t.Errorf("Name(%d) = %q, want unknown", v, got)
		}
	}
	if _, err := Parse[color](colors, []byte("blue"), "color"); err == nil || err.Error() != `unknown color "blue"` {
		t.Errorf("Parse(blue) error = %v, want unknown color \"blue\"", err)
	}
}
