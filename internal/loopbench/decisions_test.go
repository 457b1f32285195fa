package loopbench

import (
	"bufio"
	"flag"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// clock is a time or a duration in an open breaker's refusal (since when,
// how long ago, until when): it differs from run to run, the decision
// does not.
var clock = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\d+(\.\d+)?(ns|µs|ms|s)\b`)

var decisionsOut = flag.String("decisions", "", "write the runtime's decision on every event of every trace here (TestDecisionsDump)")

// TestDecisionsDump writes what the runtime decides on each event of each
// trace (the project's own and the public sets beside the clone), replayed
// in full, one line an event. It is how a change to the guard chain that
// must decide nothing differently (a faster path, a cache) is shown to:
// the file from a build before and from one after are compared line by
// line (docs/BENCHMARKS.md, the thirteenth session, has the commands).
// Without -decisions it does nothing.
func TestDecisionsDump(t *testing.T) {
	if *decisionsOut == "" {
		t.Skip("no -decisions file")
	}
	f, err := os.Create(*decisionsOut)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	n := 0
	for _, dir := range []string{"testdata", "../loops/testdata", "../../../shared/loopbench/traces", "../../../shared/loopbench/traces-v2"} {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		traces, err := LoadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range traces {
			for _, d := range Decisions(tr, nil) {
				if d.Code == "breaker_open" {
					d.Reason = clock.ReplaceAllString(d.Reason, "T")
				}
				w.WriteString(tr.ID + "\t" + d.ID + "\t" + strconv.FormatBool(d.Refused) + "\t" + d.Code + "\t" + strconv.Quote(d.Reason) + "\n")
				n++
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d decisions", n)
}
