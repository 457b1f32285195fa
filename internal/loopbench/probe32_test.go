package loopbench

import "testing"

// p32Known lists the runs of the thirty-second probe whose outcome is not
// their label's, each with why. The probe (../loops/testdata/probe32,
// written by its gen.go before reading the guard's rules again) holds runs
// shaped as agent frameworks shape them on their defaults: parallel calls
// of one tool with their arguments' key order or the batch's order moved
// each step (and fan-outs over distinct items, one keyed by a nested id), a
// structured output failing validation the same way while the model
// rewords the rest (and one converging), a file read in growing windows
// (and the same window, and the same window after each edit), handoffs
// around two or three agents with no tool call between (and a chain that
// moves), agents used as tools, errors that differ only by a request id
// (non-transient, transient past four attempts, transient that clears),
// manual runs of one tool (the same arguments, edited ones), a human
// approval polled while it moves (and after its rejection), multi-step
// loops whose steps move or repeat.
//
// As written, on the guard then (fcbd165b): 12 of 12 loops detected,
// each at its mark, none early; none of 12 legit runs refused.
var p32Known = map[string]string{}

// TestProbe32 replays the thirty-second probe through Run, the path of
// `reach bench loops`, and fails when a run's outcome is neither its
// label's nor the one p32Known records.
func TestProbe32(t *testing.T) {
	checkProbe(t, "thirty-second probe", "../loops/testdata/probe32", p32Known)
}
