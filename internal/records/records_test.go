package records

import (
	"testing"

	"github.com/agentreach/reach/internal/fault"
)

func TestRequestStateStopped(t *testing.T) {
	for s, want := range map[RequestState]bool{
		RequestRunning: false, RequestStoppedSoft: true, RequestStoppedCancel: true, RequestStoppedIsolate: true,
		RequestCompleted: false, RequestInterrupted: false,
	} {
		if s.Stopped() != want {
			t.Errorf("%s.Stopped() = %v, want %v", s, s.Stopped(), want)
		}
	}
}

func TestResultModelText(t *testing.T) {
	ok := &Result{Status: StatusSuccess, Data: []byte(`{"n":1}`), Notes: []string{"truncated"}}
	if got := ok.ModelText(); got != "{\"n\":1}\n[reach] truncated" || ok.IsError() || ok.Err() != nil {
		t.Fatalf("a success: %q, IsError %v, Err %v", got, ok.IsError(), ok.Err())
	}
	failed := &Result{Status: StatusRefused, Data: []byte(`ignored`), Error: &fault.Error{Message: "No.", Suggestion: "Ask."}}
	if got := failed.ModelText(); got != "No.\nAsk." || !failed.IsError() || failed.Err() == nil {
		t.Fatalf("a refusal: %q, IsError %v, Err %v", got, failed.IsError(), failed.Err())
	}
}
