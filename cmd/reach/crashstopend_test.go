package main

import (
	"fmt"
	"strings"
	"testing"
)

// stopEndCases are the cases of TestCrashAtEveryDurablePoint between a
// stop of a request's own and its end, which comes at once (the client's
// POST .../end) while the stop's undos run: the end is stored only after
// them (docs/STATE.md), so a kill anywhere in between leaves the request
// stored stopped and not ended, which the restart lists. Request r books
// two legs, each with an undo, and is stopped, then ended:
//
//   - undo.ended#1: the newer leg's undo ran and its end is durable, the
//     older one's not begun;
//   - undo.ended#2: both ran, r's end not stored;
//   - request.ended#1: the end of r's compensation's request stored, r's
//     not yet;
//   - request.ended#2: r's end stored, after its compensation's.
//
// After the restart each leg is undone once, none dead-lettered, and r is
// stopped. Before, r's end could be stored before its compensation began,
// and a kill in between left r stopped and ended, which no recovery found:
// both legs stayed booked; and an undo's end was queued, so a kill right
// after it could leave it "executing", dead-lettered though it had run.
func stopEndCases() []durablePoint {
	var out []durablePoint
	for _, point := range []string{"undo.ended#1", "undo.ended#2", "request.ended#1", "request.ended#2"} {
		out = append(out, durablePoint{
			point: point,
			drive: func(t *testing.T, h *crashRun) {
				for step := 1; step <= 2; step++ {
					if res := call(t, h.base, book("r", fmt.Sprint("k", step), 1, step)); res.Status != "success" {
						t.Fatalf("booking: %+v", res)
					}
				}
				h.post("/v1/requests/r/cancel", `{"reason":"enough"}`)
				h.post("/v1/requests/r/end", "")
			},
			check: func(t *testing.T, h *crashRun) {
				if s := h.state(t, "r"); !strings.HasPrefix(s, "stopped") {
					t.Errorf("request r is %s; want it stopped", s)
				}
				for _, leg := range []string{"1/1", "1/2"} {
					if n := h.counts(func(fx *sideEffects) int { return fx.undone[leg] }); n != 1 {
						t.Errorf("leg %s of the stopped request was undone %d times; want 1", leg, n)
					}
				}
				if dl := h.deadLetters(t); len(dl) != 0 {
					t.Errorf("dead letters: %v; want none (each undo ran once)", dl)
				}
			},
		})
	}
	return out
}
