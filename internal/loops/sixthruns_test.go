package loops

import (
	"fmt"
	"testing"
)

// The sixth probe: written before reading the detectors or the earlier
// probes' runs (their tool names grepped only to leave them out), by the
// agents users run with their frameworks' defaults: a coding agent on MCP
// filesystem, editor and git servers fixing a failing test, a GitHub
// issue triager, a Slack and Linear assistant, a docs agent with a
// retriever, an analyst on CSV files through a pandas REPL and SQL, a
// travel agent on flight and hotel APIs, a devops agent on metrics, logs
// and a cluster, a support agent refunding payments, and agents that hand
// work to each other. Tools keep the access their servers declare: an
// editor that both views and edits, and a shell, are writes.
//
// Half the runs are legit and half loops. A loop is marked at the first
// call a careful reader would refuse, never earlier than the benchmark's
// rules allow; a legit run never reaches a point the rules could refuse.

// The sixth probe is written and played with the assistants probe's
// writer and driver (assistruns_test.go), under its own names.
type (
	sxCall = asCall
	sxTurn = asTurn
	sxRun  = asRun
	sxw    = asw
	sxPlay = asPlay
)

var (
	sxRunOf = asRunOf
	sxOK    = asOK
	sxFail  = asFail
)

// sxKnown lists the runs whose outcome is not their label's, each with why.
var sxKnown = map[string]string{
	// On main when the probe was written (fe35cb9): 10 of 13 loops
	// detected, none early; 0 of 13 legit runs refused. After its fixes
	// 12 and none. The pandas REPL that answers an exception as its
	// result ("KeyError: 'Date'" for six expressions) is caught since the
	// seventh probe: an exception answered is a failure.
}

func TestSixthRuns(t *testing.T) {
	checkAsRuns(t, "sixth probe", sixthRuns(), 24, sxKnown)
}

// sxTS is a Slack message's ts, minutes after a morning's start.
func sxTS(min int) string { return fmt.Sprintf("17332%05d.%06d", 38000+min*60, 100+min*7) }

// sxISO is a date-time minutes after a morning's start.
func sxISO(min int) string {
	return fmt.Sprintf("2026-12-03T%02d:%02d:%02dZ", 9+min/60, min%60, (min*17)%60)
}
