package reachmeta

import (
	"maps"
	"testing"
)

func TestWithout(t *testing.T) {
	none := map[string]any{"a": 1, "reachx/b": 2}
	if got := Without(none); !maps.Equal(got, none) {
		t.Fatalf("Without of a map with no reach/ key: %v", got)
	}
	some := map[string]any{"a": 1, "reach/status": "refused", "reach/request": "r"}
	got := Without(some)
	if want := map[string]any{"a": 1}; !maps.Equal(got, want) {
		t.Fatalf("Without: %v, want %v", got, want)
	}
	if len(some) != 3 {
		t.Fatalf("Without changed its argument: %v", some)
	}
	if Without(nil) != nil {
		t.Fatal("Without(nil) is not nil")
	}
	for k, want := range map[string]bool{"reach/x": true, "reach/": true, "reach": false, "Reach/x": false, "x/reach/": false} {
		if IsKey(k) != want {
			t.Errorf("IsKey(%q) = %v, want %v", k, !want, want)
		}
	}
}
