package sqlcore

import (
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// FinalStates lists the states store.FrameDone calls final, and only
// those: the open frames a restart reads are the ones the runtime has not
// ended.
func TestFinalStatesAreFrameDone(t *testing.T) {
	list := strings.Trim(FinalStates, "()")
	var n int
	for _, q := range strings.Split(list, ",") {
		s := strings.Trim(strings.TrimSpace(q), "'")
		if !store.FrameDone(s) {
			t.Errorf("FinalStates holds %q, which FrameDone does not call final", s)
		}
		n++
	}
	for _, s := range []string{"completed", "failed", "refused", "cancelled", "executing", "pending", "running", "waiting"} {
		if store.FrameDone(s) && !strings.Contains(FinalStates, "'"+s+"'") {
			t.Errorf("FrameDone calls %q final, FinalStates does not hold it", s)
		}
	}
	if n != 4 {
		t.Errorf("FinalStates holds %d states, want the 4 FrameDone calls final", n)
	}
}
