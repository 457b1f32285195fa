package loopbench

import "testing"

// p31Known lists the runs of the thirty-first probe whose outcome is not
// their label's, each with why. The probe (../loops/testdata/probe31,
// written by its gen.go before reading the guard's rules again) holds
// kinds no earlier probe uses, as agents on OpenAI-style tool calls make
// them: a job polled between waits, a model or a user asked one question
// reworded, edits that revert each other, a text translated back and
// forth, a cursor cycling between two pages, two searches alternated
// across tools, writes answered ok whose read shows nothing new, a ticket
// bounced between teams, a browser told in words to go to a next page, a
// rate limit retried, map-reduces by one tool and by one sub-agent,
// incremental builds, a log tailed, meeting slots tried in rotation, and
// long chats.
//
// As written, on the guard then (d9ddbe2d): 15 of 17 loops detected, none
// early, 2 missed; none of 13 legit runs refused. Since its fixes, 17 of
// 17 and none: a reply in an object of one text member says what its
// text says (TestToldInOneMember), and a model's reply beside the call's
// token counts is the answer, the counts the exchange's
// (TestModelReplyUsage).
var p31Known = map[string]string{}

// TestProbe31 replays the thirty-first probe through Run, the path of
// `reach bench loops`, and fails when a run's outcome is neither its
// label's nor the one p31Known records.
func TestProbe31(t *testing.T) {
	checkProbe(t, "thirty-first probe", "../loops/testdata/probe31", p31Known)
}
