package demo

import (
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/render"
)

// Every scenario does what its row says, and reach never spends more than
// the step counter.
func TestScenarios(t *testing.T) {
	ss := Run(t.Context())
	t.Log("\n" + Table(ss))
	if len(ss) != 7 {
		t.Fatalf("%d scenarios, want 7", len(ss))
	}
	for _, s := range ss {
		if !s.OK {
			t.Errorf("%s: reach did not do what the table says (%s)", s.Name, s.Reach)
		}
		if s.Saved() < 0 {
			t.Errorf("%s: reach spent %d more tokens than the step counter", s.Name, -s.Saved())
		}
		if svg := render.SVG(render.Frames(s.Request)); !strings.Contains(string(svg), "<svg") {
			t.Errorf("%s: no graph", s.Name)
		}
	}
	for _, name := range []string{"formatter loop", "planner/executor/verifier livelock", "sub-agent budget"} {
		for _, s := range ss {
			if s.Name == name && s.Saved() <= 0 {
				t.Errorf("%s: saved %d tokens, want some", name, s.Saved())
			}
		}
	}
}
