package loopbench

import "testing"

// p28Known lists the runs of the twenty-eighth probe whose outcome is not
// their label's, each with why. The probe (../loops/testdata/probe28,
// written by its gen.go before reading the guard's rules again) holds
// trajectories in the shapes other frameworks give them: parallel calls
// from one turn, sub-agents and hand-offs, polling with backoff, offset
// and token pages, refinements that learn, retries after errors, and
// results wrapped in an MCP content list, a call's envelope, a function
// response or a text observation.
//
// As written, on the guard then (3cb6a61c): 8 of 14 loops detected, none
// early, 6 missed; 4 of 17 legit runs refused. Since its fixes, 12 of 14
// and 2: an MCP result with isError is a failure (TestMCPErrorAnswer), a
// tool's output in its call's envelope is its output
// (TestToolOutputEnvelope), collected_at is a stamp (TestCollectedStamps),
// an echo cut short is an echo (TestEchoCutShort), and a wait after a
// poll that moved is time passing (TestWaitBetweenPollsThatMove).
var p28Known = map[string]string{
	// The scheduler's last_scheduling_decision moves, a time the system
	// last looked under a word no rule knows.
	"probe28-airflow-backoff-queued": "missed",
	// HGVS names (c.5946delT) are code's shape: no asking is free text.
	"probe28-clinvar-observation-reworded": "missed",
	// Both refused by the benchmark's own rule: a third read alike with
	// nothing written since (a tariff in a parallel batch, a resolver
	// that has not yet served the record).
	"probe28-battery-parallel-after-setpoint": "false_kill",
	"probe28-dns-txt-split-propagate":         "false_kill",
}

// TestProbe28 replays the twenty-eighth probe through Run, the path of
// `reach bench loops`, and fails when a run's outcome is neither its
// label's nor the one p28Known records: a newly detected loop or a newly
// allowed legit run is a change to record, as a new miss or refusal is.
func TestProbe28(t *testing.T) {
	checkProbe(t, "twenty-eighth probe", "../loops/testdata/probe28", p28Known)
}
