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

// A slot looked for day by day, each day's window busy from end to end
// (the answer naming the window asked), asks of another day each time, as
// windows of dates alone do: it goes on. Hour by hour over one day, the
// same answers are one window shifted (TestWindowShiftedSameAnswer).
func TestWindowOnOtherDays(t *testing.T) {
	run := func(id string, window func(i int) [2]string) asPlay {
		w := asRunOf(id, "calendar", false)
		for i := 0; i < 6; i++ {
			win := window(i)
			w.t("", asOK("freebusy", obj{"timeMin": win[0], "timeMax": win[1], "items": arr{obj{"id": "mia@shop.example"}}},
				obj{"calendars": obj{"mia@shop.example": obj{"busy": arr{obj{"start": win[0], "end": win[1]}}}}}))
		}
		return playAs(w.run)
	}
	days := func(i int) [2]string {
		d := fmt.Sprintf("2026-12-%02d", 8+i)
		return [2]string{d + "T08:00:00Z", d + "T17:00:00Z"}
	}
	if p := run("days", days); p.refusedAt >= 0 {
		t.Errorf("another day each time: refused at %d: %v", p.refusedAt, p.v)
	}
	hours := func(i int) [2]string {
		return [2]string{fmt.Sprintf("2026-12-08T%02d:00:00Z", 8+i), fmt.Sprintf("2026-12-08T%02d:00:00Z", 9+i)}
	}
	if p := run("hours", hours); p.refusedAt != 3 || p.v.Detector != "repeat" {
		t.Errorf("hours of one day: refused at %d (%v), want the fourth, repeat", p.refusedAt, p.v)
	}
}
