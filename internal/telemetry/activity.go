package telemetry

import (
	"strings"
	"time"

	"github.com/agentreach/reach"
)

// The live states of a request (RequestActivity), as the UI, the CLI and
// the reach_requests_active gauge name them.
const (
	StateRunning  = "running"              // a call or model turn is in flight
	StateWaiting  = "waiting_for_approval" // a call waits for a human's decision
	StateIdle     = "idle"                 // nothing in flight, not ended
	StateStopped  = "stopped"              // stopped (soft, cancel, isolate) or interrupted by a restart
	StateDone     = "done"                 // ended
	stateUnknown  = ""
	maxWalkFrames = 100000
)

// LiveStates are the states of a request not ended, in the order they are
// shown.
var LiveStates = []string{StateRunning, StateWaiting, StateIdle, StateStopped}

// Activity is what a request and its sub-requests are doing now.
type Activity struct {
	State string
	// Mode is how a stopped request was stopped: soft, cancel, isolate,
	// or interrupted.
	Mode string
	// Frames counted by what they are doing or how they ended. Waiting
	// counts the calls awaiting approval: Held those still held open
	// (approvals.wait), the rest answered "pending" to their caller.
	Frames, InFlight, Waiting, Held, Refused, Failed, Cancelled int
	// Last is when its last frame ended (the request's start if none did),
	// or now while a frame is in flight.
	Last time.Time
}

// RequestActivity walks r and its sub-requests. A call answered "pending"
// (ended awaiting approval) counts as waiting for as long as its approval
// may still be decided; RequestActivityPending knows better.
func RequestActivity(r *reach.Request, now time.Time) Activity {
	return RequestActivityPending(r, now, nil)
}

// RequestActivityPending is RequestActivity where a call answered
// "pending" waits only while pending says an approval asked in its request
// (by the request's id) still waits: once that approval was approved and
// used, denied or expired, nothing waits for it, and the request is idle
// (or running). A call held open for its decision (approvals.wait) waits
// whatever pending says. A nil pending counts every such call as waiting.
func RequestActivityPending(r *reach.Request, now time.Time, pending func(request string) bool) Activity {
	a := Activity{Last: r.Started()}
	walked := 0
	var walk func(*reach.Request)
	walk = func(q *reach.Request) {
		// The frames a request let go from memory ended: counted from its
		// tally, not read back from the store.
		fs, gone := q.KeptFrames()
		a.Frames += gone.Frames
		a.Refused += gone.Refused
		a.Failed += gone.Failed
		a.Cancelled += gone.Cancelled
		if gone.Last.After(a.Last) {
			a.Last = gone.Last
		}
		for _, f := range fs {
			if walked++; walked > maxWalkFrames {
				return
			}
			a.Frames++
			switch f.State() {
			case reach.Refused:
				a.Refused++
			case reach.Failed:
				a.Failed++
			case reach.Cancelled:
				a.Cancelled++
			case reach.AwaitingApproval:
				switch {
				case f.Ended().IsZero():
					a.Waiting++
					a.Held++
				case pending == nil || pending(q.ID()):
					a.Waiting++
				}
			case reach.Completed:
			default:
				a.InFlight++
			}
			if e := f.Ended(); e.After(a.Last) {
				a.Last = e
			}
		}
		for _, c := range q.Children() {
			walk(c)
		}
	}
	walk(r)
	switch st := r.State(); {
	case st == reach.RequestInterrupted:
		a.State, a.Mode = StateStopped, "interrupted"
	case st.Stopped():
		a.State, a.Mode = StateStopped, strings.TrimPrefix(string(st), "stopped_")
	case st == reach.RequestCompleted:
		a.State = StateDone
	case a.Waiting > 0:
		a.State = StateWaiting
	case a.InFlight > 0:
		a.State = StateRunning
	default:
		a.State = StateIdle
	}
	if a.InFlight > 0 || a.Held > 0 {
		a.Last = now
	}
	return a
}
