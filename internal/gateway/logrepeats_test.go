package gateway

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRepeatsCollapseAnOutage: an error logged again and again (every
// call's read of the store while it is down) is logged once, its repeats
// counted (the metric's source), its end logged once with their count;
// other errors and records below ERROR are logged as they are.
func TestRepeatsCollapseAnOutage(t *testing.T) {
	var out lockedBuffer
	p := NewRepeats(time.Second)
	log := p.Logger(slog.New(slog.NewTextHandler(&out, nil))).With("component", "history")
	for i := range 5 {
		log.Error("history: reading a request", "request", i, "err", "connection refused")
		log.Warn("cluster: a heartbeat failed", "n", i)
	}
	log.Error("store: a queued write failed", "err", "connection refused")
	text := out.String()
	if n := strings.Count(text, `msg="history: reading a request"`); n != 1 {
		t.Fatalf("the repeated error was logged %d times; want once:\n%s", n, text)
	}
	if !strings.Contains(text, "component=history") || !strings.Contains(text, "is counted (reach_log_repeats_total)") {
		t.Fatalf("the first of the run does not keep its attributes or say its repeats are counted:\n%s", text)
	}
	if n := strings.Count(text, "heartbeat failed"); n != 5 {
		t.Fatalf("warnings logged %d times; want each of 5", n)
	}
	if n := strings.Count(text, "queued write failed"); n != 1 {
		t.Fatalf("another error logged %d times; want once", n)
	}
	if c := p.Counts(); c["history: reading a request"] != 4 || len(c) != 1 {
		t.Fatalf("repeats counted: %v; want 4 of the read", c)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), "the repeats stopped"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run's end was not logged:\n%s", out.String())
		}
	}
	text = out.String()
	if !strings.Contains(text, `msg="history: reading a request: the repeats stopped" component=history repeats=4`) {
		t.Fatalf("the run's end does not say how many repeats:\n%s", text)
	}
	if strings.Contains(text, "queued write failed: the repeats stopped") {
		t.Fatalf("the end of a run without repeats was logged:\n%s", text)
	}
	// After its end, the error is logged again, a new run.
	log.Error("history: reading a request", "request", 9)
	if n := strings.Count(out.String(), `msg="history: reading a request" `); n != 2 {
		t.Fatalf("the error after its run ended was logged %d times in all; want twice", n)
	}
}
