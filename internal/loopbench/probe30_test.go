package loopbench

import "testing"

// p30Known lists the runs of the thirtieth probe whose outcome is not
// their label's, each with why.
var p30Known = map[string]string{
	"probe30-contract-search-synonyms-empty": "missed",
	"probe30-date-parser-cosmetic-edits":     "missed",
	"probe30-date-parser-irrelevant-edits":   "missed",
	"probe30-events-calendar-trap":           "missed",
	"probe30-inbox-fresh-request-ids":        "missed",
	"probe30-object-etag-flaps":              "missed",
	"probe30-quota-as-of-epoch":              "missed",
	"probe30-replan-todo-tool-same":          "missed",
}

// TestProbe30 replays the thirtieth probe through Run, the path of
// `reach bench loops`, and fails when a run's outcome is neither its
// label's nor the one p30Known records.
func TestProbe30(t *testing.T) {
	checkProbe(t, "thirtieth probe", "../loops/testdata/probe30", p30Known)
}
