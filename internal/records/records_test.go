package records

import "testing"

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
