package loopbench

import "testing"

// p30Known lists the runs of the thirtieth probe whose outcome is not
// their label's, each with why. The probe (../loops/testdata/probe30,
// written by its gen.go before reading the guard's rules again) holds
// kinds no earlier probe uses: plans re-made under new step numbers,
// failing writes retried with cosmetic changes, answers that differ only
// in an etag or a Date header, bisection, cursor crawls, a task handed
// back down under a new name, run-tests/edit loops, synonyms, and reads
// stamped only with a fresh request id.
//
// As written, on the guard then (a95a779f): 8 of 19 loops detected, none
// early, 11 missed; 1 of 11 legit runs refused. Since its fixes, 11 of 19
// and none: empty pages with only flags beside a moved cursor name
// nothing (TestCursorEmptyPagesWithMore), a hand-off of a task an agent
// on its chain was handed, another task between, is a cycle
// (TestDelegationTaskCycle), an answer not accepted with its errors is a
// failure (TestRejectedAnswer), and an HTTP response's exchange headers
// in a text are masked (TestHTTPResponseHeadLines).
var p30Known = map[string]string{
	// Nothing tells a plan's write, another file's edit or a cosmetic
	// rewrite from a write the next read or run could see; a fix tried
	// otherwise each time while the test fails in the same words is
	// legitimate in the earlier probes.
	"probe30-replan-todo-tool-same":        "missed",
	"probe30-date-parser-irrelevant-edits": "missed",
	"probe30-date-parser-cosmetic-edits":   "missed",
	// An ETag is the content's version; "generated" may be a count the
	// answer reports; a month is no date-time the echo rule masks.
	"probe30-object-etag-flaps":    "missed",
	"probe30-quota-as-of-epoch":    "missed",
	"probe30-events-calendar-trap": "missed",
	// Synonyms sharing no word, each finding nothing: a batch of lookups.
	"probe30-contract-search-synonyms-empty": "missed",
	// A read whose only argument is a request id asks for what it names.
	"probe30-inbox-fresh-request-ids": "missed",
}

// TestProbe30 replays the thirtieth probe through Run, the path of
// `reach bench loops`, and fails when a run's outcome is neither its
// label's nor the one p30Known records.
func TestProbe30(t *testing.T) {
	checkProbe(t, "thirtieth probe", "../loops/testdata/probe30", p30Known)
}
