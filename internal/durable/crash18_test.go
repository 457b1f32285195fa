package durable

import (
	"testing"

	"github.com/agentreach/reach/internal/store"
)

// TestRetriedDeadLetter: the dead letter an operator's retry took is read
// from the retry's request id ("<request>/retry/dl-<n>-<hex>"), and from
// nothing else: a compensation, a request of an agent, an older retry's id
// without the dead letter.
func TestRetriedDeadLetter(t *testing.T) {
	for _, tc := range []struct {
		id, agent, parent string
		want              int64
	}{
		{id: "r/retry/dl-7-0a1b2c", agent: "operator", want: 7},
		{id: "a/b/retry/dl-12-ff", agent: "operator", want: 12},
		{id: "r/retry/0a1b2c", agent: "operator"},               // an older binary's retry
		{id: "r/retry/dl-x-0a", agent: "operator"},              // not a number
		{id: "r/retry/dl-0-0a", agent: "operator"},              // no dead letter 0
		{id: "r/compensate/dl-7-0a", agent: "reach"},            // a compensation
		{id: "r/retry/dl-7-0a", agent: "support"},               // not the operator's
		{id: "r/retry/dl-7-0a", agent: "operator", parent: "p"}, // a sub-request
		{id: "r/retry/dl-7", agent: "operator"},                 // no suffix
	} {
		n, ok := retriedDeadLetter(&store.Request{ID: tc.id, Agent: tc.agent, Parent: tc.parent})
		if n != tc.want || ok != (tc.want != 0) {
			t.Errorf("retriedDeadLetter(%q, %s, parent %q) = %d, %v; want %d", tc.id, tc.agent, tc.parent, n, ok, tc.want)
		}
	}
}
