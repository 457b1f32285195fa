package loops

import (
	"fmt"
	"testing"
)

// Many questions, each asked once and answered small with nothing new
// (a gateway's echo tool under load, one status per id): none keeps a
// streak's state, and what each keeps until a second asking is bounded.
// A streak's state for each of them held 13 MB more under 128 sessions.
func TestSmallAnswersKeepNoStreak(t *testing.T) {
	d := New(nil)
	for i := range 2000 {
		s := &Step{Kind: ToolCall, Tool: "lookup", Access: "read", Args: []byte(fmt.Sprintf(`{"email":"user%d@example.com"}`, i))}
		if v := d.Check(s); v != nil {
			t.Fatalf("call %d refused: %s", i, v.Message)
		}
		d.Done(s, Outcome{Result: []byte(`{"customers":[]}`)})
	}
	if n := d.questions.len(); n != 0 {
		t.Errorf("%d questions asked once keep a streak's state, want 0", n)
	}
	if n, most := d.smallOnce.len(), max(d.cfg.maxKeys/64, 16); n > most {
		t.Errorf("%d questions asked once are remembered, want at most %d", n, most)
	}
}
