package loops

import (
	"fmt"
	"testing"
)

// TestQueueSpanKeys: how long a job has been in a queue, under a key that
// says so and names its unit (time_in_queue_s, queue_seconds), is a span
// that grows while nothing else moves, as waiting_s is: a job polled whose
// answer moves only there is the same answer, its third poll refused
// (repeat). A queue that moves goes on; a queue's length and a count of
// jobs in it have no unit of time and are the answer's.
func TestQueueSpanKeys(t *testing.T) {
	poll := func(position, inQueue int) op {
		return call("quantum_job_status", `{"job_id":"cx7q2v9r3m0g008k4h1g"}`,
			fmt.Sprintf(`{"id":"cx7q2v9r3m0g008k4h1g","queue_position":%d,"status":"QUEUED","time_in_queue_s":%d}`, position, inQueue))
	}
	runCases(t, []testCase{
		{"a job whose time in the queue alone grows", nil, []op{poll(14, 610), poll(14, 910), refused(poll(14, 1210), "repeat")}},
		{"a job that moves up the queue", nil, []op{poll(14, 610), poll(9, 910), poll(3, 1210), poll(1, 1510)}},
	})
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"time_in_queue_s", true}, {"queue_seconds", true}, {"queueTimeMinutes", true}, {"in_queue_sec", true},
		{"queue", false}, {"queue_length", false}, {"queue_position", false}, {"queued_jobs", false},
	} {
		if got := volatileKey([]byte(c.key)); got != c.want {
			t.Errorf("volatileKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}

// TestEpochStamps: when an answer was made, under a key that says so
// ("generated", "retrieved"), written as a number of seconds or
// milliseconds since the Unix epoch, is the answer's stamp as a date-time
// there is: a catalog asked again whose answer moves only there is the
// same answer, its third identical call refused (repeat). A count under
// such a key ("generated": 12) and an instant under another key (an
// event's "time") are the answer's.
func TestEpochStamps(t *testing.T) {
	ask := func(generated int64, count int, eventTime int64) op {
		return call("fdsn_event_query", `{"minmagnitude":6,"starttime":"2026-12-06T08:00:00"}`,
			fmt.Sprintf(`{"metadata":{"count":%d,"generated":%d},"features":[{"id":"us7000q1xz","properties":{"mag":6.4,"time":%d}}]}`, count, generated, eventTime))
	}
	runCases(t, []testCase{
		{"a catalog whose stamp alone moves, in milliseconds", nil, []op{ask(1796558400000, 1, 1796551440000), ask(1796558441000, 1, 1796551440000), refused(ask(1796558482000, 1, 1796551440000), "repeat")}},
		{"a catalog whose stamp alone moves, in seconds", nil, []op{ask(1796558400, 1, 1796551440000), ask(1796558441, 1, 1796551440000), refused(ask(1796558482, 1, 1796551440000), "repeat")}},
		{"a new event each time", nil, []op{ask(1796558400000, 1, 1796551440000), ask(1796558441000, 1, 1796551500000), ask(1796558482000, 1, 1796551560000), ask(1796558523000, 1, 1796551620000)}},
	})
	counts := func(generated int) op {
		return call("report_status", `{"report":"weekly"}`, fmt.Sprintf(`{"generated":%d,"state":"running"}`, generated))
	}
	runCases(t, []testCase{
		{"a count of rows generated that grows", nil, []op{counts(120), counts(4500), counts(98000), counts(1200000)}},
	})
	for _, c := range []struct {
		in   string
		want int
	}{
		{"1796558400000", 13}, {"1796558400", 10}, {"1796558400.125,", 14}, {"1796558400}", 10},
		{"179655840", 0}, {"17965584000", 0}, {"1796558400000.5", 0}, {"1796558400e3", 0}, {"12", 0},
	} {
		if got := epochLen([]byte(c.in)); got != c.want {
			t.Errorf("epochLen(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}
