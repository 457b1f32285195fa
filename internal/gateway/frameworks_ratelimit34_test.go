package gateway

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestFrameworksModelRateLimits (R8): past its principal's bucket of
// model turns (rate_limit.model: a burst of two, refilled once in
// 1000 s) a framework's third model call is refused before it reaches
// the model, as an OpenAI-style error no SDK retries (403, not the 429
// every SDK retries): the run ends with its text, which says which limit
// and when to try again; the model got two turns, and the framework sent
// three model calls, none again.
func TestFrameworksModelRateLimits(t *testing.T) {
	dir, node := frameworksCache(t)
	for _, fw := range guardFrameworks {
		t.Run(fw, func(t *testing.T) {
			s := newGuardShop(t, "rate_limit: {model: {per_principal: 0.001, per_principal_burst: 2}}\n")
			r := runGuard(t, dir, node, fw, s, "fw33a-rate")
			if r.OK {
				t.Fatalf("the run: %+v, want it ended by the refused model call", r)
			}
			for _, w := range []string{"Too many model calls (per-principal rate limit)", "Try again in 1000s"} {
				if !strings.Contains(r.Error, w) {
					t.Errorf("the run's error %q, want it to say %q", r.Error, w)
				}
			}
			if st := s.wire.statuses(); !slices.Equal(st, []int{200, 200, http.StatusForbidden}) {
				t.Errorf("model calls answered %v, want two 200 and one 403 (no retry)", st)
			}
			if n := s.model.turns.Load(); n != 2 {
				t.Errorf("the model got %d turns, want 2 (the burst)", n)
			}
			if n := s.up.called("lookup"); n != 2 {
				t.Errorf("the upstream ran %d lookups, want 2 (one a turn)", n)
			}
		})
	}
}
