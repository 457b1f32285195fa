package link

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/jsonscan"
)

// TestPriorityFromMeta (R8): a tools/call's _meta reach/priority asks for
// a new request's priority as Reach-Priority does (a whole number, or a
// string of one), read alike from the map and from the raw _meta; it
// lowers the principal's priority and never raises it; any other value is
// bad_priority.
func TestPriorityFromMeta(t *testing.T) {
	life, stop := context.WithCancel(context.Background())
	defer stop()
	q := NewOwned(life, reach.New(nil), time.Minute, Budgets{Default: &reach.Budget{}}).
		WithPriorities(func(o Owner) int {
			if o.Principal == "oncall" {
				return 2
			}
			return 0
		})
	defer q.EndAll()
	read := func(t *testing.T, meta string) (Meta, error) {
		t.Helper()
		var mm map[string]any
		if err := json.Unmarshal([]byte(meta), &mm); err != nil {
			t.Fatal(err)
		}
		m, err := FromMeta(mm)
		var raw RawMeta
		jsonscan.Members([]byte(meta), func(k, v []byte) {
			key, _ := jsonscan.Unquote(k)
			raw.Set([]byte(key), v)
		})
		rm, rerr := FromRawMeta(&raw)
		if (err == nil) != (rerr == nil) || err != nil && err.Error() != rerr.Error() {
			t.Fatalf("%s: FromMeta %v, FromRawMeta %v", meta, err, rerr)
		}
		if (m.Priority == nil) != (rm.Priority == nil) || m.Priority != nil && *m.Priority != *rm.Priority {
			t.Fatalf("%s: FromMeta and FromRawMeta read different priorities", meta)
		}
		return m, err
	}
	for _, tc := range []struct {
		who, meta string
		want      int
	}{
		{"oncall", `{}`, 2},
		{"oncall", `{"reach/priority":null}`, 2},
		{"oncall", `{"reach/priority":1}`, 1},
		{"oncall", `{"reach/priority":"0"}`, 0},
		{"oncall", `{"reach/priority":-3}`, -3},
		{"oncall", `{"reach/priority":1.0}`, 1},
		{"oncall", `{"reach/priority":9}`, 2},
		{"alice", `{"reach/priority":1}`, 0},
		{"alice", `{"reach/priority":-1}`, -1},
	} {
		m, err := read(t, tc.meta)
		if err != nil {
			t.Fatalf("%s: %v", tc.meta, err)
		}
		ctx := auth.WithIdentity(life, &auth.Identity{Principal: tc.who, Method: "api_key"})
		_, r, done, err := q.CallContext(ctx, m.Target, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.who, tc.meta, err)
		}
		if got := r.Priority(); got != tc.want {
			t.Errorf("%s with _meta %s: priority %d, want %d", tc.who, tc.meta, got, tc.want)
		}
		done()
	}
	for _, bad := range []string{`"high"`, `1.5`, `"1.5"`, `true`, `[1]`, `{"p":1}`, `99999999999`, `1e300`} {
		_, err := read(t, `{"reach/priority":`+bad+`}`)
		var le *Error
		if !errors.As(err, &le) || le.Code != KindBadPriority.Code || le.Status != 400 || le.Suggestion == "" {
			t.Errorf("_meta reach/priority %s: err %v, want bad_priority", bad, err)
		}
	}
}
