package loops

import (
	"errors"
	"strconv"
	"testing"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/records"
)

func TestToolOutcome(t *testing.T) {
	tests := []struct {
		name string
		res  *records.Result
		err  error
		want Outcome
	}{
		{"an error of the path", nil, errors.New("boom"), Outcome{Refused: true}},
		{"refused", &records.Result{Status: records.StatusRefused}, nil, Outcome{Refused: true}},
		{"cancelled", &records.Result{Status: records.StatusCancelled}, nil, Outcome{Refused: true}},
		{"pending", &records.Result{Status: records.StatusPending}, nil, Outcome{Refused: true}},
		{"replayed", &records.Result{Status: records.StatusSuccess, Replayed: true, Data: []byte(`{}`)}, nil, Outcome{Refused: true}},
		{"an open breaker", &records.Result{Status: records.StatusError, Error: &fault.Error{Type: fault.TypeUnavailable, Code: "circuit_open"}}, nil, Outcome{Refused: true}},
		{"unavailable after retries", &records.Result{Status: records.StatusError, Error: &fault.Error{Type: fault.TypeUnavailable, Code: "circuit_open", Retry: "3/3", Message: "down"}}, nil,
			Outcome{Error: true, ErrorType: "unavailable", Result: []byte(`"down"`)}},
		{"transient under the tool's code", &records.Result{Status: records.StatusError, Error: &fault.Error{Type: fault.TypeTransient, Code: "busy", Message: "try later"}}, nil,
			Outcome{Error: true, ErrorType: "unavailable", Result: []byte(`"try later"`)}},
		{"a transient code kept", &records.Result{Status: records.StatusError, Error: &fault.Error{Type: fault.TypeTransient, Code: "timeout", Message: "slow"}}, nil,
			Outcome{Error: true, ErrorType: "timeout", Result: []byte(`"slow"`)}},
		{"a tool's failure", &records.Result{Status: records.StatusError, Error: &fault.Error{Type: fault.TypeTool, Code: "not_found", Message: "no order"}}, nil,
			Outcome{Error: true, ErrorType: "not_found", Result: []byte(`"no order"`)}},
		{"success, canonical", &records.Result{Status: records.StatusSuccess, Data: []byte(`{"b": 1, "a": 2}`)}, nil, Outcome{Result: []byte(`{"a":2,"b":1}`)}},
		{"success, not JSON", &records.Result{Status: records.StatusSuccess, Data: []byte(`plain`)}, nil, Outcome{Result: []byte(`"plain"`)}},
	}
	for _, tt := range tests {
		got := toolOutcome(tt.res, tt.err, nil)
		if got.Refused != tt.want.Refused || got.Error != tt.want.Error || got.ErrorType != tt.want.ErrorType || string(got.Result) != string(tt.want.Result) {
			t.Errorf("%s: ToolOutcome = %+v (result %s), want %+v (result %s)", tt.name, got, got.Result, tt.want, tt.want.Result)
		}
	}
}

// TestDoneToolAllocations: DoneTool reads a tool's result into the
// detector's own buffer, not a copy for each call: one allocation a call
// fewer than Done with ToolOutcome, and the same judgement (the third
// identical read is refused by either).
func TestDoneToolAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	step := func(args string) *Step {
		return &Step{Kind: ToolCall, Tool: "get", Args: []byte(args), Access: "read"}
	}
	res := []*records.Result{{Status: records.StatusSuccess, Data: []byte(`{"status": "shipped", "n": 1}`)}}
	var verdicts [2]string
	var allocs [2]float64
	for i, done := range []func(d *Detector, s *Step, r *records.Result){
		func(d *Detector, s *Step, r *records.Result) { d.Done(s, toolOutcome(r, nil, nil)) },
		func(d *Detector, s *Step, r *records.Result) { d.DoneTool(s, r, nil) },
	} {
		d := New(nil)
		for range 3 {
			s := step(`{"id":"a"}`)
			if v := d.Check(s); v != nil {
				verdicts[i] = v.Detector
				break
			}
			done(d, s, res[0])
		}
		// Calls of other arguments, each with a result of its own: nothing
		// repeats, nothing is refused.
		const calls = 200
		steps := make([]*Step, calls)
		results := make([]*records.Result, calls)
		for k := range calls {
			steps[k] = step(`{"id":"k` + strconv.Itoa(k) + `"}`)
			results[k] = &records.Result{Status: records.StatusSuccess, Data: []byte(`{"status": "shipped", "n": ` + strconv.Itoa(k) + `}`)}
		}
		n := 0
		call := func() {
			s := steps[n]
			if v := d.Check(s); v != nil {
				t.Fatalf("call %d refused: %s", n, v.Message)
			}
			done(d, s, results[n])
			n++
		}
		for range 20 {
			call()
		}
		allocs[i] = testing.AllocsPerRun(100, call) // 101 calls, after 20
	}
	if verdicts[0] != "repeat" || verdicts[1] != verdicts[0] {
		t.Errorf("the third identical read: refused by %q with Done and by %q with DoneTool, want repeat", verdicts[0], verdicts[1])
	}
	if allocs[1] > allocs[0]-1 {
		t.Errorf("a call reported with DoneTool allocates %v times, with Done %v: want one fewer", allocs[1], allocs[0])
	}
}
