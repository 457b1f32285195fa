package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A keyless claim's lookup of the other claims of its cut-off key
// (reach_claim_cut) reads the claims of that key only, whatever plan
// PL/pgSQL keeps for it: with many claims held on a table without
// statistics yet, every plan of the lookup that auto_explain shows scans
// idempotency_in_flight by the cut-off key. Before (schema 18's index on
// the key alone), the generic plan walked idempotency_claims in claim
// order and filtered every claim held: its CPU grew with the claims held.
// The lookup still finds the identical write held by a live life.
func TestInFlightLookupReadsItsKeyOnly(t *testing.T) {
	url := pgtest.Database(t)
	s := openPostgres(t, url)
	ctx := context.Background()
	now := time.Now()
	claim := func(key, cut, root string) *store.IdemRecord {
		t.Helper()
		r := &store.IdemRecord{Key: key, Owner: "reach/1", Args: "d1", Claimed: now, Expires: now.Add(time.Hour), CutOff: cut, CutRoot: root}
		if _, ok, err := s.ClaimKey(ctx, r); err != nil || !ok {
			t.Fatalf("claim %s: %v %v", key, ok, err)
		}
		return r
	}
	for i := range 200 {
		claim(fmt.Sprintf("alice\x00\x00pay:held/c%d", i), fmt.Sprintf("0123456789abcdef.%064x", i), "held")
	}

	var mu sync.Mutex
	var plans []string
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		plans = append(plans, n.Message)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `LOAD 'auto_explain'`); err != nil {
		t.Skipf("auto_explain is not installed with this PostgreSQL: %v", err)
	}
	for _, set := range []string{"auto_explain.log_min_duration = 0", "auto_explain.log_nested_statements = on",
		"auto_explain.log_analyze = on", "client_min_messages = log"} {
		if _, err := conn.Exec(ctx, "SET "+set); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO instances (owner, name, started, seen) VALUES ('reach/1', 'reach', 0, 1)`); err != nil {
		t.Fatal(err)
	}
	// More calls than PL/pgSQL makes custom plans for (5): the plan it
	// keeps is looked at too. The last is an identical write of a held one.
	for i := range 8 {
		cut := fmt.Sprintf("fedcba9876543210.%064x", i)
		if i == 7 {
			cut = fmt.Sprintf("0123456789abcdef.%064x", 42)
		}
		var root, request string
		var at int64
		err := conn.QueryRow(ctx, `SELECT o_fl_root, o_fl_at, o_fl_request FROM reach_claim_cut($1, 'reach/1', 'd1', 'r', 'f', $2, $3, $4, 'held')`,
			[]byte(fmt.Sprintf("alice\x00\x00pay:new/c%d", i)), now.UnixNano(), now.Add(time.Hour).UnixNano(), cut).Scan(&root, &at, &request)
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 7; (root == "held") != want {
			t.Fatalf("claim %d: the lookup found %q (at %d, request %q); want the held identical write: %v", i, root, at, request, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	looked := 0
	for _, p := range plans {
		if !strings.Contains(p, "i.cut_key = p_cut") {
			continue
		}
		looked++
		if !strings.Contains(p, "Index Scan using idempotency_in_flight") || !strings.Contains(p, "Index Cond: (cut_key = ") {
			t.Errorf("the lookup of a claim's cut-off key read more than that key's claims:\n%s", p)
		}
	}
	if looked != 8 {
		t.Fatalf("%d plans of the lookup shown, want 8 (notices: %d)", looked, len(plans))
	}
}
