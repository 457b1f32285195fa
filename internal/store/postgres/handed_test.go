package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
)

// TestPostgresLeaveHandsUndosOver: A's part of a request leaves with two
// undos while B's runs on; they are handed over to the request's record.
// Stopped, the request is not ended by B's leave, its last live part: it
// is an orphan with no part, which ClaimOrphans gives a recovery. Not
// stopped, B's leave ends it and no recovery claims it: the handed undos
// are let go. Before, A's leave handed nothing and B's ended the stopped
// request.
func TestPostgresLeaveHandsUndosOver(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	ttl := time.Minute
	for _, o := range []string{"A/1", "B/1", "C/1"} {
		if err := a.Heartbeat(ctx, o, o[:1], time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, stopped := range []bool{true, false} {
		id := "r-ended"
		if stopped {
			id = "r-stopped"
		}
		if _, _, err := a.JoinRequest(ctx, joinReq(id, "alice"), "A/1", ttl); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.JoinRequest(ctx, joinReq(id, "alice"), "B/1", ttl); err != nil {
			t.Fatal(err)
		}
		if last, err := a.LeaveRequestHanding(ctx, id, "A/1", ttl, "ended", nil, nil, time.Now(), 2); err != nil || last {
			t.Fatalf("A leaves %s = %v, %v; want not the last", id, last, err)
		}
		var handed int
		if err := a.pool.QueryRow(ctx, `SELECT handed FROM requests WHERE id = $1`, id).Scan(&handed); err != nil || handed != 2 {
			t.Fatalf("%s holds %d handed undos (%v); want 2", id, handed, err)
		}
		state := "ended"
		if stopped {
			if _, err := b.StopRequest(ctx, id, 2, []byte(`{"mode":"cancel","by":"api","reason":"enough"}`)); err != nil {
				t.Fatal(err)
			}
			state = "stopped"
		}
		last, err := b.LeaveRequestHanding(ctx, id, "B/1", ttl, state, nil, nil, time.Now(), 0)
		if err != nil || last == stopped {
			t.Fatalf("B leaves %s = %v, %v; want last %v", id, last, err, !stopped)
		}
		r, err := a.GetRequest(ctx, id)
		if err != nil || r.State != state || r.Ended.IsZero() == !stopped {
			t.Fatalf("after both left, %s = %+v, %v; want %s, ended %v", id, r, err, state, !stopped)
		}
	}
	ids, err := a.ClaimOrphans(ctx, "C/1", ttl, 10)
	if err != nil || !slices.Equal(ids, []string{"r-stopped"}) {
		t.Fatalf("ClaimOrphans = %v, %v; want the stopped request only", ids, err)
	}
}

// TestPostgresHandedClaimOnceAcrossStores: two instances' claims of one
// task at once, while one request's record waits and another's was used,
// take the waiting one once: the other claim finds none waiting (as one
// instance's memory decides one after the other), whichever commits
// first. Each of 8 rounds hands the task anew.
func TestPostgresHandedClaimOnceAcrossStores(t *testing.T) {
	a, b, _ := twoPostgres(t)
	ctx := t.Context()
	t0 := time.Now()
	for round := range 8 {
		r1, r2 := fmt.Sprintf("r1-%d", round), fmt.Sprintf("r2-%d", round)
		digest := fmt.Sprintf("d%d", round)
		for _, id := range []string{r1, r2} {
			if err := a.PutRequest(ctx, &store.Request{ID: id, Principal: "alice", State: "running", Started: t0}); err != nil {
				t.Fatal(err)
			}
			if err := a.PutHandedTasks(ctx, []*store.HandedTask{{Digest: digest, Principal: "alice", Request: id, Frame: "f",
				Created: t0, Expires: t0.Add(time.Minute)}}, 100); err != nil {
				t.Fatal(err)
			}
			if id == r1 {
				if h, err := a.ClaimHandedTask(ctx, "alice", "", digest, t0); err != nil || h == nil || h.Request != r1 {
					t.Fatalf("the claim of r1's record alone: %+v, %v", h, err)
				}
			}
		}
		got, err := claimAtOnce(ctx, a, b, digest, t0)
		if err != nil {
			t.Fatal(err)
		}
		taken := 0
		for i := range got {
			if got[i] != nil {
				if got[i].Request != r2 {
					t.Fatalf("round %d: a claim took %s's record, want r2's (the one waiting) or none", round, got[i].Request)
				}
				taken++
			}
		}
		if taken != 1 {
			t.Fatalf("round %d: %d claims took r2's waiting record, want exactly 1", round, taken)
		}
	}
}

// claimAtOnce is alice's claims of the task digest, at t0, on a and b
// started at the same moment: the record each took (nil for none), or
// their errors.
func claimAtOnce(ctx context.Context, a, b *Store, digest string, t0 time.Time) ([2]*store.HandedTask, error) {
	var got [2]*store.HandedTask
	var errs [2]error
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range []*Store{a, b} {
		wg.Go(func() {
			<-start
			got[i], errs[i] = s.ClaimHandedTask(ctx, "alice", "", digest, t0)
		})
	}
	close(start)
	wg.Wait()
	return got, errors.Join(errs[:]...)
}
