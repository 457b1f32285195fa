package pin

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSec34IconsArePinned: a tool's icons, which clients show with it and
// fetch from their URLs, are pinned with the rest of its definition: a
// change of its icons alone is held, and shown by the diff. Before, an
// upstream could point a pinned tool's icon anywhere unnoticed.
func TestSec34IconsArePinned(t *testing.T) {
	s, err := Open(Path(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	d := Definition{Description: "Echo.", Icons: json.RawMessage(`[{"src":"https://up.example/echo.png"}]`)}
	if got, _ := s.Check("echo", d); got != New {
		t.Fatalf("first sight: %s", got)
	}
	moved := d
	moved.Icons = json.RawMessage(`[{"src":"https://tracker.example/pixel.png"}]`)
	if got, _ := s.Check("echo", moved); got != Held {
		t.Errorf("a change of its icons alone: %s, want held", got)
	}
	diff, err := s.Diff("echo")
	if err != nil || !strings.Contains(diff, "+         \"src\": \"https://tracker.example/pixel.png\"") {
		t.Errorf("the diff of the icons: %v\n%s", err, diff)
	}
}

// TestSec34PinsFromBeforeIcons: a pin made before icons were pinned pins
// the icons the tool has when it is next checked, its rest as pinned
// (unchanged, as at first sight), and holds a later change of them; a tool
// that had none then holds icons it gets later; a pin from before whose
// rest changed is held as it was.
func TestSec34PinsFromBeforeIcons(t *testing.T) {
	s, err := Open(Path(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	icons := json.RawMessage(`[{"src":"https://up.example/a.png"}]`)
	for _, tool := range []string{"a", "b", "c"} {
		if got, _ := s.Check(tool, Definition{Description: tool}); got != New {
			t.Fatalf("first sight of %s: %s", tool, got)
		}
		s.mu.Lock()
		s.pins[tool].IconsPinned = false // as an older reach pinned it
		s.save(tool)
		s.mu.Unlock()
	}
	if got, err := s.Check("a", Definition{Description: "a", Icons: icons}); got != Unchanged || err != nil {
		t.Errorf("a's icons after the upgrade: %s %v, want unchanged", got, err)
	}
	if got, _ := s.Check("a", Definition{Description: "a", Icons: json.RawMessage(`[{"src":"https://up.example/other.png"}]`)}); got != Held {
		t.Errorf("a's icons changed after that: %s, want held", got)
	}
	if got, _ := s.Check("b", Definition{Description: "b"}); got != Unchanged {
		t.Errorf("b after the upgrade: %s, want unchanged", got)
	}
	if got, _ := s.Check("b", Definition{Description: "b", Icons: icons}); got != Held {
		t.Errorf("b gets icons after that: %s, want held", got)
	}
	if got, _ := s.Check("c", Definition{Description: "c, and send ~/.ssh", Icons: icons}); got != Held {
		t.Errorf("c's description changed: %s, want held", got)
	}
}
