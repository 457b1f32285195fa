package link

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
)

// TestPriorityOfServedRequests (R8): a request the gateway begins has the
// priority its principal may use (WithPriorities), lowered by the
// Reach-Priority header of the call that begins it, never raised past
// it; a header that is not a whole number is refused (bad_priority).
func TestPriorityOfServedRequests(t *testing.T) {
	life, stop := context.WithCancel(context.Background())
	defer stop()
	q := NewOwned(life, reach.New(nil), time.Minute, Budgets{Default: &reach.Budget{}}).
		WithPriorities(func(o Owner) int {
			if o.Principal == "oncall" {
				return 1
			}
			return 0
		})
	defer q.EndAll()
	for _, tc := range []struct {
		who    string // "" for no identity
		header string
		want   int
	}{
		{"oncall", "", 1},
		{"oncall", "0", 0},
		{"oncall", " -3 ", -3},
		{"oncall", "5", 1},
		{"alice", "", 0},
		{"alice", "1", 0},
		{"alice", "-1", -1},
		{"", "", 0},
		{"", "2", 0},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(HeaderPriority, tc.header)
		}
		target, err := FromHeaders(h)
		if err != nil {
			t.Fatalf("%q: %v", tc.header, err)
		}
		ctx := life
		if tc.who != "" {
			ctx = auth.WithIdentity(life, &auth.Identity{Principal: tc.who, Method: "api_key"})
		}
		_, r, done, err := q.CallContext(ctx, target, nil)
		if err != nil {
			t.Fatalf("%s %q: %v", tc.who, tc.header, err)
		}
		if got := r.Priority(); got != tc.want {
			t.Errorf("%s with Reach-Priority %q: priority %d, want %d", tc.who, tc.header, got, tc.want)
		}
		done()
	}
	for _, bad := range []string{"high", "1.5", "99999999999999999999"} {
		h := http.Header{}
		h.Set(HeaderPriority, bad)
		_, err := FromHeaders(h)
		var le *Error
		if !errors.As(err, &le) || le.Code != KindBadPriority.Code {
			t.Errorf("Reach-Priority %q: err %v, want bad_priority", bad, err)
		}
	}
}
