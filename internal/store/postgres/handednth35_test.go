package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// TestPostgresHandedCallsClaimedAtOnce: two instances' claims at once of
// a task one turn handed in two calls (two sub-agents asked the same
// thing, their first turns on two instances at the same moment) take one
// record each. A claim that read the records before the other's took one
// reads them anew once its lock is let go: without the lock it chose the
// same record, found it used, and took none (the sub-agent then ran
// outside its manager's request).
func TestPostgresHandedCallsClaimedAtOnce(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	t0 := time.Now()
	for round := range 8 {
		req, digest := fmt.Sprintf("r-%d", round), fmt.Sprintf("d%d", round)
		if err := a.PutRequest(ctx, &store.Request{ID: req, Principal: "alice", State: "running", Started: t0}); err != nil {
			t.Fatal(err)
		}
		var rows []*store.HandedTask
		for nth := range 2 {
			rows = append(rows, &store.HandedTask{Digest: digest, Principal: "alice", Request: req, Frame: "f", Nth: nth,
				Created: t0, Expires: t0.Add(time.Minute)})
		}
		if err := a.PutHandedTasks(ctx, rows, 100); err != nil {
			t.Fatal(err)
		}
		got, err := claimAtOnce(ctx, a, b, digest, t0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] == nil {
				t.Fatalf("round %d: claim %d took no record; want one of the two calls' each", round, i)
			}
		}
		if got[0].Nth == got[1].Nth {
			t.Fatalf("round %d: both claims took the record of call %d; want one each", round, got[0].Nth)
		}
	}
}
