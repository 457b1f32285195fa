package loops

import (
	"errors"
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
		got := ToolOutcome(tt.res, tt.err)
		if got.Refused != tt.want.Refused || got.Error != tt.want.Error || got.ErrorType != tt.want.ErrorType || string(got.Result) != string(tt.want.Result) {
			t.Errorf("%s: ToolOutcome = %+v (result %s), want %+v (result %s)", tt.name, got, got.Result, tt.want, tt.want.Result)
		}
	}
}
