package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/entities"
	"github.com/agentreach/reach/internal/store"
)

func testLedgerNeverOverspends(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		if sp, err := s.Spent(ctx, "r"); err != nil || sp != (store.Spend{}) {
			t.Fatalf("Spent of a request never debited = %+v, %v", sp, err)
		}
		limit := store.Spend{ToolCalls: 10, Tokens: 1000}
		// A first debit past a cap is refused.
		if sp, ok, err := s.Debit(ctx, "r", store.Spend{ToolCalls: 11}, limit); err != nil || ok || sp != (store.Spend{}) {
			t.Fatalf("a first debit past the cap = %+v, %v, %v; want refused, nothing spent", sp, ok, err)
		}
		// 32 writers race for 10 tool calls: exactly 10 debits pass.
		var wg sync.WaitGroup
		var mu sync.Mutex
		passed := 0
		for range 32 {
			wg.Go(func() {
				_, ok, err := s.Debit(ctx, "r", store.Spend{ToolCalls: 1, Tokens: 7, CostNano: 5}, limit)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					passed++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		sp, err := s.Spent(ctx, "r")
		if err != nil || passed != 10 || sp != (store.Spend{ToolCalls: 10, Tokens: 70, CostNano: 50}) {
			t.Fatalf("%d debits passed, spent %+v (%v); want 10, {10 calls, 70 tokens, 50 cost}", passed, sp, err)
		}
		// A debit that passes another cap is refused whole; one within all passes.
		if sp, ok, _ := s.Debit(ctx, "r", store.Spend{Tokens: 931}, limit); ok || sp.Tokens != 70 {
			t.Errorf("a debit past the token cap = %+v, %v", sp, ok)
		}
		if sp, ok, _ := s.Debit(ctx, "r", store.Spend{Turns: 3, Tokens: 930}, limit); !ok || sp != (store.Spend{Turns: 3, ToolCalls: 10, Tokens: 1000, CostNano: 50}) {
			t.Errorf("a debit to the cap = %+v, %v", sp, ok)
		}
		if sp, _ := s.Spent(ctx, "other"); sp != (store.Spend{}) {
			t.Errorf("another request's ledger = %+v", sp)
		}
	})
}

// testRefusalsInARow: NoteRefused counts on from what is stored, one
// count a request (a debit of the ledger leaves it), and reset starts it
// over; 16 writers racing each get a count of their own.
func testRefusalsInARow(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		if _, _, err := s.Debit(ctx, "r", store.Spend{ToolCalls: 2}, store.Spend{}); err != nil {
			t.Fatal(err)
		}
		for want := int64(1); want <= 3; want++ {
			if n, err := s.NoteRefused(ctx, "r", false); err != nil || n != want {
				t.Fatalf("refusal %d of r: %d, %v", want, n, err)
			}
		}
		if n, err := s.NoteRefused(ctx, "other", false); err != nil || n != 1 {
			t.Fatalf("the first refusal of another request: %d, %v; want 1", n, err)
		}
		if sp, err := s.Spent(ctx, "r"); err != nil || sp != (store.Spend{ToolCalls: 2}) {
			t.Fatalf("r's ledger after its refusals: %+v, %v; want what it spent", sp, err)
		}
		if n, err := s.NoteRefused(ctx, "r", true); err != nil || n != 1 {
			t.Fatalf("a refusal after a call let through: %d, %v; want 1", n, err)
		}
		var wg sync.WaitGroup
		seen := make([]bool, 18)
		var mu sync.Mutex
		for range 16 {
			wg.Go(func() {
				n, err := s.NoteRefused(ctx, "r", false)
				mu.Lock()
				defer mu.Unlock()
				if err != nil || n < 2 || n > 17 || seen[n] {
					t.Errorf("a racing refusal counted %d, %v", n, err)
					return
				}
				seen[n] = true
			})
		}
		wg.Wait()
		// ResetRefused sets it back, leaves the ledger, and does nothing
		// to a request with no count (or no row).
		if err := s.ResetRefused(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if n, err := s.NoteRefused(ctx, "r", false); err != nil || n != 1 {
			t.Fatalf("a refusal after ResetRefused: %d, %v; want 1", n, err)
		}
		if sp, err := s.Spent(ctx, "r"); err != nil || sp != (store.Spend{ToolCalls: 2}) {
			t.Fatalf("r's ledger after ResetRefused: %+v, %v; want what it spent", sp, err)
		}
		if err := s.ResetRefused(ctx, "never"); err != nil {
			t.Fatalf("ResetRefused of a request with no row: %v", err)
		}
		if n, err := s.NoteRefused(ctx, "other", false); err != nil || n != 2 {
			t.Fatalf("another request's count after r's reset: %d, %v; want 2", n, err)
		}
	})
}

func testApprovalsCompareVersions(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		a := &store.ApprovalRecord{ID: "apr_1", Key: "k1", Status: store.ApprovalPending, Created: t0, Expires: t0.Add(15 * time.Minute),
			Data: []byte(`{"id":"apr_1","status":"pending"}`)}
		if err := s.PutApproval(ctx, a); err != nil || a.Version != 1 || a.Updated.IsZero() {
			t.Fatalf("PutApproval(new) = %v, version %d", err, a.Version)
		}
		if err := s.PutApproval(ctx, &store.ApprovalRecord{ID: "apr_1", Status: store.ApprovalPending, Created: t0}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a second new apr_1 = %v, want ErrConflict", err)
		}
		// Two writers read version 1; the first vote wins, the second is told.
		first, second := *a, *a
		first.Status, first.Data = store.ApprovalApproved, []byte(`{"id":"apr_1","status":"approved"}`)
		second.Status = "denied"
		if err := s.PutApproval(ctx, &first); err != nil || first.Version != 2 {
			t.Fatalf("PutApproval(version 1) = %v, version %d", err, first.Version)
		}
		if err := s.PutApproval(ctx, &second); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a write of version 1 after version 2 = %v, want ErrConflict", err)
		}
		got, err := s.GetApproval(ctx, "apr_1")
		if err != nil || got.Status != store.ApprovalApproved || got.Version != 2 || string(got.Data) != string(first.Data) ||
			!got.Expires.Equal(a.Expires) || got.Key != "k1" {
			t.Fatalf("GetApproval = %+v, %v", got, err)
		}
		if _, err := s.GetApproval(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetApproval(missing) = %v", err)
		}
		for i, st := range []string{"used", store.ApprovalPending, "expired", store.ApprovalApproved} {
			if err := s.PutApproval(ctx, &store.ApprovalRecord{ID: fmt.Sprint("apr_", i+2), Status: st, Created: t0.Add(time.Duration(i+1) * time.Second),
				Data: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(f store.ApprovalFilter) string {
			list, err := s.ListApprovals(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, a := range list {
				out = append(out, a.ID)
			}
			return fmt.Sprint(out)
		}
		if got := ids(store.ApprovalFilter{}); got != "[apr_5 apr_4 apr_3 apr_2 apr_1]" {
			t.Errorf("ListApprovals = %s, want newest first", got)
		}
		if got := ids(store.ApprovalFilter{Live: true}); got != "[apr_5 apr_3 apr_1]" {
			t.Errorf("ListApprovals(live) = %s", got)
		}
		if got := ids(store.ApprovalFilter{Limit: 2}); got != "[apr_5 apr_4]" {
			t.Errorf("ListApprovals(limit 2) = %s", got)
		}
		// The unaudited mark selects however old, past any window.
		if err := s.PutApproval(ctx, &store.ApprovalRecord{ID: "apr_0", Status: "denied", Created: t0.Add(-time.Hour),
			Data: []byte(`{"id":"apr_0",` + store.UnauditedMark + `}`)}); err != nil {
			t.Fatal(err)
		}
		if got := ids(store.ApprovalFilter{Unaudited: true, Limit: 1}); got != "[apr_0]" {
			t.Errorf("ListApprovals(unaudited) = %s, want the marked one alone", got)
		}
	})
}

func testEntityVersions(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		v1, err := s.BumpEntities(ctx, []string{"order:1", "order:2"})
		if err != nil {
			t.Fatal(err)
		}
		v2, _ := s.BumpEntities(ctx, []string{"order:2"})
		v3, _ := s.BumpEntities(ctx, nil)
		if !(v1 > 0 && v2 > v1 && v3 > v2) {
			t.Fatalf("versions %d, %d, %d do not grow", v1, v2, v3)
		}
		got, err := s.EntityVersions(ctx, []string{"order:1", "order:2", "order:3"})
		if err != nil || fmt.Sprint(got) != fmt.Sprint(map[string]uint64{"order:1": v1, "order:2": v2}) {
			t.Errorf("EntityVersions = %v, %v", got, err)
		}
	})
}

// testClaimEntities: a claim checked against a version an entity is no
// longer at is refused and leaves it as it is; the others of its claims,
// and the unchecked ones, are given the one new version.
func testClaimEntities(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		v1, err := s.BumpEntities(ctx, []string{"order:1"})
		if err != nil {
			t.Fatal(err)
		}
		// order:1 read at v1, order:2 never written, order:3 written blind.
		v2, stale, err := s.ClaimEntities(ctx, []entities.Claim{{Name: "order:1", From: v1, Check: true},
			{Name: "order:2", Check: true}, {Name: "order:3"}})
		if err != nil || len(stale) != 0 || v2 <= v1 {
			t.Fatalf("ClaimEntities = %d, %v, %v; want a version above %d and nothing stale", v2, stale, err, v1)
		}
		// Read before that claim: both stale now, and left at v2; the
		// unchecked one moves on.
		v3, stale, err := s.ClaimEntities(ctx, []entities.Claim{{Name: "order:1", From: v1, Check: true},
			{Name: "order:2", Check: true}, {Name: "order:3"}})
		if err != nil || fmt.Sprint(stale) != "[order:1 order:2]" || v3 <= v2 {
			t.Fatalf("ClaimEntities from old versions = %d, %v, %v; want order:1 and order:2 stale, a version above %d", v3, stale, err, v2)
		}
		got, err := s.EntityVersions(ctx, []string{"order:1", "order:2", "order:3"})
		want := map[string]uint64{"order:1": v2, "order:2": v2, "order:3": v3}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("EntityVersions = %v, %v; want %v", got, err, want)
		}
		if v4, _ := s.BumpEntities(ctx, nil); v4 <= v3 {
			t.Errorf("BumpEntities after the claims = %d, want above %d: one counter", v4, v3)
		}
	})
}

func testStoppedRequestIsFinal(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		put := func(state string, ended time.Time) error {
			return s.PutRequest(ctx, &store.Request{ID: "r", Principal: "alice", State: state, Started: t0, Ended: ended, Cause: []byte(`{"by":"bob"}`)})
		}
		if err := put("running", time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := put("stopped", time.Time{}); err != nil {
			t.Fatalf("stopping a running request: %v", err)
		}
		if err := put("stopped", t0.Add(time.Minute)); err != nil {
			t.Fatalf("ending a stopped request: %v", err)
		}
		for _, state := range []string{"running", "ended"} {
			if err := put(state, time.Time{}); !errors.Is(err, store.ErrConflict) {
				t.Errorf("storing a stopped request as %s = %v, want ErrConflict", state, err)
			}
		}
		if r, _ := s.GetRequest(ctx, "r"); r.State != "stopped" || r.Ended.IsZero() {
			t.Errorf("the stored request: %+v", r)
		}
	})
}

func testPins(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		pins, v0, err := s.ListPins(ctx)
		if err != nil || len(pins) != 0 {
			t.Fatalf("ListPins of an empty store = %v, %v", pins, err)
		}
		v1, err := s.PutPin(ctx, "kb__search", []byte(`{"tool":"kb__search","sha256":"a"}`))
		if err != nil || v1 <= v0 {
			t.Fatalf("PutPin = %d, %v; want a version after %d", v1, err, v0)
		}
		if v2, err := s.PutPin(ctx, "kb__search", []byte(`{"tool":"kb__search","sha256":"b"}`)); err != nil || v2 <= v1 {
			t.Fatalf("PutPin = %d, %v; want a version after %d", v2, err, v1)
		}
		if _, err := s.PutPin(ctx, "fs__read", []byte(`{"tool":"fs__read"}`)); err != nil {
			t.Fatal(err)
		}
		pins, v, err := s.ListPins(ctx)
		if err != nil || len(pins) != 2 || string(pins["kb__search"]) != `{"tool":"kb__search","sha256":"b"}` || v == v0 {
			t.Fatalf("ListPins = %q, version %d (was %d), %v", pins, v, v0, err)
		}
		if got, err := s.PinsVersion(ctx); err != nil || got != v {
			t.Errorf("PinsVersion = %d, %v; want %d", got, err, v)
		}
		// Many pins in one write: the version moves on once.
		v3, err := s.PutPins(ctx, map[string][]byte{
			"fs__read": []byte(`{"tool":"fs__read","sha256":"c"}`), "fs__write": []byte(`{"tool":"fs__write"}`), "prompt:greet": []byte(`{"tool":"prompt:greet"}`)})
		if err != nil || v3 <= v {
			t.Fatalf("PutPins = %d, %v; want a version after %d", v3, err, v)
		}
		pins, v4, err := s.ListPins(ctx)
		if err != nil || len(pins) != 4 || string(pins["fs__read"]) != `{"tool":"fs__read","sha256":"c"}` || string(pins["prompt:greet"]) != `{"tool":"prompt:greet"}` || v4 != v3 {
			t.Fatalf("ListPins after PutPins = %q, version %d (PutPins said %d), %v", pins, v4, v3, err)
		}
		if v5, err := s.PutPin(ctx, "kb__search", []byte(`{"tool":"kb__search","sha256":"d"}`)); err != nil || v5 != v3+1 {
			t.Errorf("PutPin after PutPins = %d, %v; want %d (PutPins moved the version on once)", v5, err, v3+1)
		}
	})
}

// A task's state at reach never goes back: once final, a later write (of
// an instance with an older view) leaves it as it is.
func testTasksStayFinal(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		put := func(state string, final bool) bool {
			t.Helper()
			ok, err := s.PutTask(ctx, &store.TaskRecord{Agent: "planner", ID: "t1", Principal: "alice", Tenant: "acme", Request: "r1",
				State: state, Final: final, Data: []byte(`{"id":"t1","status":{"state":"` + state + `"}}`)})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !put("working", false) || !put("completed", true) {
			t.Fatal("writes before the task was final were refused")
		}
		if put("working", false) || put("canceled", true) {
			t.Fatal("a write after the task was final changed it")
		}
		got, err := s.GetTask(ctx, "planner", "t1")
		if err != nil || got.State != "completed" || !got.Final || got.Request != "r1" || got.Created.IsZero() ||
			string(got.Data) != `{"id":"t1","status":{"state":"completed"}}` {
			t.Fatalf("GetTask = %+v, %v", got, err)
		}
		if _, err := s.GetTask(ctx, "planner", "t2"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetTask(missing) = %v", err)
		}
		s.PutTask(ctx, &store.TaskRecord{Agent: "planner", ID: "t2", Principal: "alice", Tenant: "acme", State: "working", Data: []byte(`{}`)})
		s.PutTask(ctx, &store.TaskRecord{Agent: "planner", ID: "t3", Principal: "bob", State: "working", Data: []byte(`{}`)})
		list, err := s.ListTasks(ctx, "planner", "alice", "acme", 0)
		if err != nil || len(list) != 2 {
			t.Fatalf("ListTasks(alice) = %d tasks, %v; want 2", len(list), err)
		}
	})
}

// testSessions: an MCP session's record is read back as written, touched,
// and gone once deleted or swept; a stored record is there to read when
// StoreSession returns.
func testSessions(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		t0 := time.Unix(1_700_000_000, 0)
		put := func(hash string, used time.Time) {
			if err := s.StoreSession(ctx, &store.SessionRecord{Hash: hash, Principal: "alice", Tenant: "acme", Protocol: "2025-06-18",
				Init: []byte(`{"clientInfo":{"name":"agent"}}`), Created: t0, Used: used}); err != nil {
				t.Fatal(err)
			}
		}
		put("h1", t0)
		put("h2", t0.Add(time.Minute))
		if err := s.DeleteSession(ctx, "h2"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetSession(ctx, "h2"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetSession(deleted) = %v; want ErrNotFound", err)
		}
		got, err := s.GetSession(ctx, "h1")
		if err != nil || got.Principal != "alice" || got.Tenant != "acme" || got.Protocol != "2025-06-18" ||
			string(got.Init) != `{"clientInfo":{"name":"agent"}}` || !got.Created.Equal(t0) || !got.Used.Equal(t0) || got.Request != "" {
			t.Fatalf("GetSession = %+v, %v", got, err)
		}
		if err := s.TouchSessions(ctx, t0.Add(time.Hour), []store.SessionUse{{Hash: "h1", Request: "r1"}, {Hash: "none"}}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetSession(ctx, "h1"); err != nil || !got.Used.Equal(t0.Add(time.Hour)) || got.Request != "r1" {
			t.Fatalf("GetSession after TouchSessions = %+v, %v", got, err)
		}
		if _, err := s.GetSession(ctx, "none"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("TouchSessions made a record: %v", err)
		}
		put("h3", t0)
		if n, err := s.SweepSessions(ctx, t0.Add(time.Minute)); err != nil || n != 1 {
			t.Fatalf("SweepSessions = %d, %v; want 1 (h3)", n, err)
		}
		if _, err := s.GetSession(ctx, "h1"); err != nil {
			t.Fatalf("SweepSessions deleted a record used since: %v", err)
		}
	})
}

// testResponseOwners: the owner of an answer is read back as written, a
// later write of the same hash by its principal replaces it, another
// principal's is refused (ErrConflict) until it expires, and a write
// deletes the records expired by its time, and only those.
func testResponseOwners(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		t0 := time.Unix(1_700_000_000, 0)
		put := func(hash, principal string, created time.Time) {
			t.Helper()
			if err := s.PutResponseOwner(ctx, &store.ResponseOwner{Hash: hash, Principal: principal, Tenant: "acme", Endpoint: "https://m.example/v1",
				Created: created, Expires: created.Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
		put("h1", "alice", t0)
		put("h2", "bob", t0.Add(30*time.Minute))
		got, err := s.GetResponseOwner(ctx, "h1")
		if err != nil || got.Principal != "alice" || got.Tenant != "acme" || got.Endpoint != "https://m.example/v1" || !got.Created.Equal(t0) || !got.Expires.Equal(t0.Add(time.Hour)) {
			t.Fatalf("GetResponseOwner = %+v, %v", got, err)
		}
		if _, err := s.GetResponseOwner(ctx, "none"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetResponseOwner(missing) = %v; want ErrNotFound", err)
		}
		// Another principal's put of h2 keeps bob's record (the first
		// writer's) and says so; bob's own replaces it.
		if err := s.PutResponseOwner(ctx, &store.ResponseOwner{Hash: "h2", Principal: "carol", Tenant: "acme", Created: t0.Add(35 * time.Minute),
			Expires: t0.Add(2 * time.Hour)}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("PutResponseOwner of bob's hash for carol = %v; want ErrConflict", err)
		}
		if got, err := s.GetResponseOwner(ctx, "h2"); err != nil || got.Principal != "bob" {
			t.Fatalf("GetResponseOwner after another principal's put = %+v, %v; want bob's", got, err)
		}
		put("h2", "bob", t0.Add(40*time.Minute))
		if got, err := s.GetResponseOwner(ctx, "h2"); err != nil || got.Principal != "bob" || !got.Created.Equal(t0.Add(40*time.Minute)) {
			t.Fatalf("GetResponseOwner after its owner's second put = %+v, %v; want bob's of 40 minutes", got, err)
		}
		put("h3", "alice", t0.Add(time.Hour)) // h1 expires then
		if _, err := s.GetResponseOwner(ctx, "h1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetResponseOwner(expired before a put) = %v; want ErrNotFound", err)
		}
		if _, err := s.GetResponseOwner(ctx, "h2"); err != nil {
			t.Fatalf("a put deleted a record not yet expired: %v", err)
		}
		put("h3", "carol", t0.Add(2*time.Hour)) // alice's h3 expired then: carol's
		if got, err := s.GetResponseOwner(ctx, "h3"); err != nil || got.Principal != "carol" {
			t.Fatalf("GetResponseOwner after a put over an expired record = %+v, %v; want carol's", got, err)
		}
	})
}
