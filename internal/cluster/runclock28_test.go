package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
)

// awaitRequestState waits until request id's stored state is state and
// returns its row.
func awaitRequestState(t *testing.T, st *postgres.Store, id, state string) *store.Request {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec, err := st.GetRequest(context.Background(), id)
		if err == nil && rec.State == state {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s: %+v, %v; want it stored %s", id, rec, err, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestJoinedPartOfRunNamedAgainCountsOn: a root request named again on
// instance a (its first run there) and joined on b while that run goes on:
// b's part counts on from what the first run spent, as a's does, its wall
// clock ending when a's ends (an hour less the first run's time); and the
// usage stored once both parts left is the request's, as SQLite and memory
// keep it: every part's and run's turns (the ledger's) and a wall clock of
// the first run and this one. Before, b's part had the whole hour from the
// run's start, and the stored usage was b's part's alone (1 turn).
func TestJoinedPartOfRunNamedAgainCountsOn(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoInstances(t, time.Minute)
	cs := [2]*Cluster{a, b}
	var rts [2]*reach.Runtime
	for i, c := range cs {
		rts[i] = reach.New(&reach.Options{Requests: c.Recorder(durable.New(c.st, nil, nil)), DisableLoopGuard: true})
	}
	opts := &reach.RequestOptions{ID: "conv", Principal: "alice", Budget: &reach.Budget{Wall: time.Hour, Turns: 10}}
	_, r1, err := rts[0].Begin(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := a.AdmitTurn(ctx, r1); err != nil {
			t.Fatal(err)
		}
	}
	r1.End()
	w1 := r1.Usage().Wall
	awaitRequestState(t, a.st, "conv", "ended")

	actx, r2, err := rts[0].Begin(ctx, opts) // named again: a begins the run
	if err != nil {
		t.Fatal(err)
	}
	bctx, rb, err := rts[1].Begin(ctx, opts) // b joins it
	if err != nil {
		t.Fatal(err)
	}
	want := r2.Started().Add(time.Hour - w1)
	if da, ok := actx.Deadline(); !ok || !da.Equal(want) {
		t.Fatalf("a's part of the run named again ends at %v (%v), want %v", da, ok, want)
	}
	if db, ok := bctx.Deadline(); !ok || !db.Equal(want) {
		t.Errorf("b's joined part ends at %v (%v), want %v as a's: an hour less the first run's %v", db, ok, want, w1)
	}
	if u := rb.Usage(); u.Wall < w1 || u.Turns != 2 {
		t.Errorf("b's part has used %+v; want the first run's 2 turns and %v counted on", u, w1)
	}
	if _, _, err := a.AdmitTurn(ctx, r2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AdmitTurn(ctx, rb); err != nil {
		t.Fatal(err)
	}
	r2.End() // a leaves first, b last
	rb.End()
	rec := awaitRequestState(t, a.st, "conv", "ended")
	var u reach.Usage
	if err := json.Unmarshal(rec.Usage, &u); err != nil {
		t.Fatalf("stored usage %s: %v", rec.Usage, err)
	}
	if u.Turns != 4 {
		t.Errorf("stored usage %+v: %d turns, want every run's and part's 4", u, u.Turns)
	}
	if bw := rb.Usage().Wall; u.Wall != bw || u.Wall <= w1 {
		t.Errorf("stored wall clock %v; want the first run's %v and this run's, %v", u.Wall, w1, bw)
	}
}
