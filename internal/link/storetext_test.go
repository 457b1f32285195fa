package link

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/callgraph"
	"github.com/agentreach/reach/internal/frames"
)

// storeRemote is a shared store that answers a frame lookup with err, or
// with a stack whose record it could not decode.
type storeRemote struct {
	err   error
	stack []reach.Ancestor
}

func (s storeRemote) Frame(context.Context, reach.FrameID) (string, []reach.Ancestor, error) {
	return "r-elsewhere", s.stack, s.err
}

// TestRefusalsCarryNoStoreText: a call under a parent frame that the
// shared store fails to look up (store_unavailable), or whose stack it
// keeps cannot be read (bad_stack), is refused with reach's own text and
// what to do next; the store's, driver's or decoder's own text (a host, a
// user, a value it could not parse) is logged with the frame and the
// request, never told to the client or the model. Before, both refusals
// quoted it.
func TestRefusalsCarryNoStoreText(t *testing.T) {
	driver := errors.New(`failed to connect to host=db-7.internal user=reach_rw database=reach: dial tcp 10.9.8.7:5432: connect: connection refused`)
	tests := []struct {
		name, code string
		remote     storeRemote
		leaks      []string // what the store said, which the refusal must not
	}{
		{"store_unavailable", KindStoreUnavailable.Code, storeRemote{err: driver}, []string{"db-7.internal", "reach_rw", "10.9.8.7", "connection refused"}},
		{"bad_stack", KindBadStack.Code, storeRemote{stack: []reach.Ancestor{{ID: 7, Kind: callgraph.AncestorKind(frames.Tool), Name: "t", Hash: "zz-not-hex", State: frames.Executing}}},
			[]string{"zz-not-hex", "ParseUint", "invalid syntax"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			rt := reach.New(nil)
			q := NewOwned(t.Context(), rt, time.Minute, Budgets{}).WithRemote(tt.remote).WithLogger(slog.New(slog.NewTextHandler(&log, nil)))
			t.Cleanup(q.EndAll)
			_, _, _, err := q.CallContext(t.Context(), Target{Parent: 0x1234}, nil)
			le, ok := errors.AsType[*Error](err)
			if !ok || le.Code != tt.code {
				t.Fatalf("got %v, want %s", err, tt.code)
			}
			told := le.Message + " " + le.Suggestion
			for _, s := range tt.leaks {
				if strings.Contains(told, s) {
					t.Errorf("the refusal %q tells the store's %q", told, s)
				}
			}
			if !strings.Contains(told, "0000000000001234") || !strings.Contains(le.Suggestion, "Nothing ran.") {
				t.Errorf("the refusal %q: want the frame named and what to do next", told)
			}
			l := log.String()
			if !strings.Contains(l, "level=WARN") || !strings.Contains(l, "frame=0000000000001234") || !strings.Contains(l, tt.leaks[0]) {
				t.Errorf("log %q: want a warning with the frame and the store's error", l)
			}
			if tt.code == KindBadStack.Code && !strings.Contains(l, "request=r-elsewhere") {
				t.Errorf("log %q: want the request", l)
			}
		})
	}
}
