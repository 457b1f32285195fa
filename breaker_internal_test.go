package reach

import (
	"testing"

	"github.com/agentreach/reach/internal/breaker"
)

// TestBreakerStatesMatch: the public states are the state machine's, value
// for value (Breaker.State converts one into the other).
func TestBreakerStatesMatch(t *testing.T) {
	for pub, m := range map[BreakerState]breaker.State{BreakerClosed: breaker.Closed, BreakerOpen: breaker.Open, BreakerHalfOpen: breaker.HalfOpen} {
		if BreakerState(m) != pub {
			t.Errorf("the state machine's %d is %s, want %s", m, BreakerState(m), pub)
		}
	}
}
