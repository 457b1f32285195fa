package loopbench

import "testing"

// p33Known lists the runs of the thirty-third probe whose outcome is not
// their label's, each with why. The probe (../loops/testdata/probe33,
// written by its gen.go before reading the guard's rules again) holds
// kinds the earlier probes did not use: a search paged by an offset or a
// page number that grows while the same items come back (and pages that
// move, overlapping), tests re-run while the edits fail to apply or a
// formatter leaves the file unchanged (and edits that move the failures),
// a crawler re-reading one page through redirects or query variations
// (and distinct pages, one redirect and one return to an index), another
// agent asked over A2A one question reworded or word for word under fresh
// message ids (and distinct questions, one question to three agents, a
// task polled while it moves, an agent unavailable twice), polls asked in
// other words whose counts grow (and stand still), summaries of summaries
// by a tool and an editor sub-agent (and a map-reduce), a sub-agent
// fan-out repeated (and follow-ups), backoff on a transient error that
// clears at the fourth attempt (and on a validation error), a sheet
// filled row by row (and written past its grid), a calendar searched week
// by week.
//
// As written, on the guard then (67f188a4): 10 of 15 loops detected, one
// refused before its mark, 4 missed; none of 16 legit runs refused. The
// early one (an editor handed its own shortened draft back, the rounds
// before and after it read as ending alike) is caught at its mark since
// rounds.go's fedBack; the two A2A askings since a2a.go reads the
// protocol's envelope; the two searches paged past their items since
// paging.go's pageAnswer leaves out the position an answer echoes. One mark was moved after the first run, and is
// said so in gen.go: the same question sent under a fresh messageId,
// from its fourth send to its third, where the twenty-ninth probe marks
// a call the same but for its stamps of the exchange.
var p33Known = map[string]string{}

// TestProbe33 replays the thirty-third probe through Run, the path of
// `reach bench loops`, and fails when a run's outcome is neither its
// label's nor the one p33Known records.
func TestProbe33(t *testing.T) {
	checkProbe(t, "thirty-third probe", "../loops/testdata/probe33", p33Known)
}
