package loops

import (
	"fmt"
	"testing"
)

// A flag switched on for each window of an experiment by one agent and
// off by another that reads the window first is not one write made again
// that changed nothing: each "on" sets back what the other agent set
// otherwise after looking. Answered alike ({"ok": true}), the two writes
// say nothing of what they set, and the agent's own writes in a row are a
// write made again; with nothing read in between, two agents switching a
// flag whose answers carry its version are still refused.
func TestWriteSetBackAfterAnotherAgentLooked(t *testing.T) {
	run := func(id string, read bool, answer func(on bool, v int) string) asPlay {
		w := asRunOf(id, "flags", false).acc("write", "patch_flag")
		a, b := s19As(w, "scheduler"), s19As(w, "analyst")
		v := 0
		for r := 0; r < 5; r++ {
			v++
			a.t("On.", asOK("patch_flag", obj{"flag": "new-checkout", "on": true}, answer(true, v)))
			if read {
				b.t("Reading.", asOK("get_conversion", obj{"flag": "new-checkout", "window": r + 1}, obj{"window": r + 1, "conversion": fmt.Sprintf("3.%d%%", r)}))
			}
			v++
			b.t("Off.", asOK("patch_flag", obj{"flag": "new-checkout", "on": false}, answer(false, v)))
		}
		return playAs(w.run)
	}
	if p := run("windows", true, s20Flag); p.refusedAt >= 0 {
		t.Errorf("a window read before each switch back: refused at %d: %v", p.refusedAt, p.v)
	}
	alike := func(bool, int) string { return `{"ok": true}` }
	if p := run("windows-answered-alike", true, alike); p.refusedAt < 0 || p.v.Detector != "short_cycle" {
		t.Errorf("each switch answered alike: refused at %d (%v), want short_cycle", p.refusedAt, p.v)
	}
	if p := run("nothing-read", false, s20Flag); p.refusedAt < 0 || p.v.Detector != "short_cycle" {
		t.Errorf("nothing read in between: refused at %d (%v), want short_cycle", p.refusedAt, p.v)
	}
}
