package loopbench

import "testing"

// p29Known lists the runs of the twenty-ninth probe whose outcome is not
// their label's, each with why. The probe (../loops/testdata/probe29,
// written by its gen.go before reading the guard's rules again) holds
// kinds no earlier probe uses: hand-offs fanned out from one turn,
// map-reduce sub-agents, streamed and cursor-paged results, one query in
// other notations and languages, stamps and counters in the arguments,
// and long polls that learn.
//
// As written, on the guard then (e84e79e8): 10 of 17 loops detected, none
// early, 7 missed; no legit run refused. Since its fixes, 15 of 17 and
// none: a fan-out's round ends with its own receiver's verdict
// (TestFanOutRoundsEachReceiver), a read's request ids, client clock,
// attempt and metadata step counters are not what it asks
// (TestExchangeArgs), a poll's id is the exchange's (TestPollIDs), and an
// answer's cursor under "next" is its next page's (TestCursorUnderNext).
var p29Known = map[string]string{
	// One thing in other notations (a compound's name, SMILES, InChIKey
	// and CAS number; a day written six ways): code-shaped values, each
	// another question.
	"probe29-calendar-date-notations": "missed",
	"probe29-compound-notations":      "missed",
}

// TestProbe29 replays the twenty-ninth probe through Run, the path of
// `reach bench loops`, and fails when a run's outcome is neither its
// label's nor the one p29Known records: a newly detected loop or a newly
// allowed legit run is a change to record, as a new miss or refusal is.
func TestProbe29(t *testing.T) {
	checkProbe(t, "twenty-ninth probe", "../loops/testdata/probe29", p29Known)
}
