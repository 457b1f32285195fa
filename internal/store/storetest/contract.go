package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentreach/reach/internal/store"
)

// contract runs f against the store open opens.
func contract(t *testing.T, open Opener, f func(t *testing.T, s store.Store)) {
	f(t, open(t))
}

var t0 = time.Unix(1_700_000_000, 123456789)

func testRequests(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		if _, err := s.GetRequest(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetRequest(missing) = %v, want ErrNotFound", err)
		}
		var want []*store.Request
		for i := range 5 {
			state := "running"
			if i%2 == 1 {
				state = "ended"
			}
			r := &store.Request{ID: fmt.Sprintf("req_%d", i), Principal: "alice", Agent: "main", State: state,
				Budget: []byte(`{"turns":3}`), Started: t0.Add(time.Duration(i) * time.Second)}
			if i == 3 {
				r.Parent, r.Scene, r.Usage, r.Cause, r.Ended = "req_1", "chitchat", []byte(`{"turns":1}`), []byte(`{"by":"op"}`), t0.Add(time.Hour)
				r.Tenant, r.Roles, r.Attrs = "acme", []string{"buyer", "operator"}, map[string]string{"department": "sales"}
				r.Trace = "0af7651916cd43dd8448eb211c80319c"
			}
			if err := s.PutRequest(ctx, r); err != nil {
				t.Fatal(err)
			}
			if r.Updated.IsZero() {
				t.Fatal("PutRequest did not set Updated")
			}
			want = append([]*store.Request{r}, want...) // newest first
		}
		got, err := s.GetRequest(ctx, "req_3")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[1], got); diff != "" {
			t.Errorf("GetRequest (-want +got):\n%s", diff)
		}
		tests := []struct {
			name string
			f    store.RequestFilter
			want []*store.Request
		}{
			{"all", store.RequestFilter{}, want},
			{"running", store.RequestFilter{State: "running"}, []*store.Request{want[0], want[2], want[4]}},
			{"limit", store.RequestFilter{Limit: 2}, want[:2]},
			{"before", store.RequestFilter{Before: t0.Add(3 * time.Second)}, want[2:]},
			{"before and state", store.RequestFilter{Before: t0.Add(3 * time.Second), State: "ended"}, []*store.Request{want[3]}},
			{"sub-requests", store.RequestFilter{Parent: "req_1"}, []*store.Request{want[1]}},
		}
		for _, tt := range tests {
			got, err := s.ListRequests(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ListRequests(%s) (-want +got):\n%s", tt.name, diff)
			}
		}
		// Replacing keeps one row.
		r := *want[0]
		r.State = "stopped"
		if err := s.PutRequest(ctx, &r); err != nil {
			t.Fatal(err)
		}
		all, _ := s.ListRequests(ctx, store.RequestFilter{})
		if len(all) != 5 || all[0].State != "stopped" {
			t.Errorf("after replace: %d requests, first in state %q; want 5, stopped", len(all), all[0].State)
		}
	})
}

func testFrames(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		put := func(f *store.Frame) { putFrame(t, s, f) }
		a := &store.Frame{Request: "r1", Frame: "000000000000000a", Kind: "model", Name: "gpt", State: "executing", Started: t0}
		b := &store.Frame{Request: "r1", Frame: "000000000000000b", Parent: a.Frame, Kind: "tool", Name: "pay",
			CallID: "c1", IdemKey: "pay:r1/c1", State: "executing", Args: []byte(`{"amount":3}`),
			Undo: []byte(`{"tool":"refund"}`), Started: t0.Add(time.Millisecond)}
		c := &store.Frame{Request: "r2", Frame: "000000000000000c", Kind: "tool", Name: "read", State: "executing", Started: t0}
		put(a)
		put(b)
		put(c)
		a.State = "completed"
		put(a) // an update keeps its place
		b2 := *b
		b2.State, b2.Error = "failed", []byte(`{"code":"tool_error"}`)
		got, err := s.RequestFrames(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]*store.Frame{a, b}, got); diff != "" {
			t.Errorf("RequestFrames (-want +got):\n%s", diff)
		}
		open, err := s.OpenFrames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(open) != 2 || open[0].Frame != c.Frame || open[1].Frame != b.Frame {
			t.Errorf("OpenFrames = %v, want frames c, b", frameIDs(open))
		}
		put(&b2)
		open, _ = s.OpenFrames(ctx)
		if len(open) != 1 || open[0].Frame != c.Frame {
			t.Errorf("OpenFrames after b failed = %v, want frame c", frameIDs(open))
		}
	})
}

// testFrameOrder: frames that started at the same instant are listed in
// the order they were first written, however they were written since: a
// frame ended, or put open again (final or not before), keeps its place
// among its peers, in RequestFrames as in OpenFrames.
func testFrameOrder(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		put := func(request, frame, state string, started time.Time) {
			t.Helper()
			putFrame(t, s, &store.Frame{Request: request, Frame: frame, Kind: "tool", Name: "pay", State: state, Started: started})
		}
		for _, f := range []string{"00000000000000f3", "00000000000000a1", "00000000000000c2", "00000000000000b4"} {
			put("r1", f, "executing", t0)
			put("r2", f, "executing", t0)
		}
		put("r1", "00000000000000ee", "executing", t0.Add(-time.Nanosecond)) // started earlier, written last
		// Each frame of r1 written again: the first ended, the second put
		// open again, the third ended and then put open again; the last
		// ended. r2's first frame is put open again.
		put("r1", "00000000000000f3", "completed", t0)
		put("r1", "00000000000000a1", "executing", t0)
		put("r1", "00000000000000c2", "failed", t0)
		put("r1", "00000000000000c2", "executing", t0)
		put("r1", "00000000000000b4", "completed", t0)
		put("r2", "00000000000000f3", "executing", t0)
		got, err := s.RequestFrames(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"r1/00000000000000ee/executing", "r1/00000000000000f3/completed", "r1/00000000000000a1/executing",
			"r1/00000000000000c2/executing", "r1/00000000000000b4/completed"}
		if diff := cmp.Diff(want, frameIDs(got)); diff != "" {
			t.Errorf("RequestFrames (-want +got):\n%s", diff)
		}
		open, err := s.OpenFrames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want = []string{"r1/00000000000000ee/executing",
			"r2/00000000000000f3/executing", "r1/00000000000000a1/executing", "r2/00000000000000a1/executing",
			"r1/00000000000000c2/executing", "r2/00000000000000c2/executing", "r2/00000000000000b4/executing"}
		if diff := cmp.Diff(want, frameIDs(open)); diff != "" {
			t.Errorf("OpenFrames (-want +got):\n%s", diff)
		}
	})
}

// putFrame puts f in s; the test ends if s refuses it.
func putFrame(t *testing.T, s store.Store, f *store.Frame) {
	t.Helper()
	if err := s.PutFrame(t.Context(), f); err != nil {
		t.Fatal(err)
	}
}

func frameIDs(fs []*store.Frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Request+"/"+f.Frame+"/"+f.State)
	}
	return out
}

func testIdemRecords(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		now := t0
		claim := func(key, owner string, lease time.Time) (*store.IdemRecord, bool) {
			t.Helper()
			r, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: owner, Claimed: now, Expires: lease})
			if err != nil {
				t.Fatal(err)
			}
			return r, ok
		}
		if _, ok := claim("k", "a", time.Time{}); !ok {
			t.Fatal("first claim of k failed")
		}
		r, ok := claim("k", "b", time.Time{})
		if ok || r.Owner != "a" || r.State != store.IdemClaimed || r.Result != nil {
			t.Fatalf("second claim = %+v, %v; want a's claim", r, ok)
		}
		if err := s.CompleteKey(ctx, "k", "b", []byte(`{}`), now.Add(time.Hour)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("CompleteKey by a non-owner = %v, want ErrConflict", err)
		}
		if err := s.ReleaseKey(ctx, "k", "b"); err != nil {
			t.Fatal(err)
		}
		if _, ok := claim("k", "b", time.Time{}); ok {
			t.Fatal("a release by a non-owner freed the key")
		}
		if err := s.CompleteKey(ctx, "k", "a", []byte(`{"status":"success"}`), now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		r, ok = claim("k", "b", time.Time{})
		if ok || r.State != store.IdemDone || string(r.Result) != `{"status":"success"}` || !r.Expires.Equal(now.Add(time.Hour)) {
			t.Fatalf("claim of a done key = %+v, %v; want the done record", r, ok)
		}
		// Release.
		claim("rel", "a", time.Time{})
		if err := s.ReleaseKey(ctx, "rel", "a"); err != nil {
			t.Fatal(err)
		}
		if _, ok := claim("rel", "b", time.Time{}); !ok {
			t.Fatal("a released key could not be claimed")
		}
		// A claim whose lease ended is returned, not taken over: its call
		// may have run, and only its settlement (as its owner) frees it.
		claim("lease", "a", now.Add(time.Minute))
		now = now.Add(time.Hour)
		r, ok = claim("lease", "b", time.Time{})
		if ok || r.Owner != "a" || r.State != store.IdemClaimed || !r.Expires.Equal(t0.Add(time.Minute)) {
			t.Fatalf("claim of a key whose claim's lease ended = %+v, %v; want a's claim, to settle", r, ok)
		}
		if err := s.CompleteKey(ctx, "lease", "a", []byte(`{"status":"error"}`), now.Add(time.Hour)); err != nil {
			t.Fatalf("settling the stale claim as its owner: %v", err)
		}
		// Expiry: k is done until t0+1h; at that moment it is free again.
		// Claims are never swept, however old their lease.
		claim("stale", "a", t0.Add(time.Second))
		now = t0.Add(time.Hour)
		n, err := s.SweepKeys(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("SweepKeys swept %d records, want 1 (k)", n)
		}
		if _, ok := claim("k", "c", time.Time{}); !ok {
			t.Fatal("an expired key could not be claimed")
		}
		if r, ok := claim("stale", "c", time.Time{}); ok || r.Owner != "a" {
			t.Fatalf("a stale claim was swept: claim = %+v, %v", r, ok)
		}
	})
}

// A claim keeps what it was made for: the call's arguments and checkpoint.
// ClaimedKeys lists the claims, oldest first, and no result.
func testIdemClaims(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		want := []*store.IdemRecord{
			{Key: "pay:r1/c1", Owner: "reach/aa", State: store.IdemClaimed, Args: "d1", Request: "r1", Frame: "00000000000000f1",
				Claimed: t0, Expires: t0.Add(time.Minute)},
			{Key: "pay:r1/c2", Owner: "reach/bb", State: store.IdemClaimed, Args: "d2", Claimed: t0.Add(time.Second)},
		}
		for _, r := range slices.Backward(want) {
			if _, ok, err := s.ClaimKey(ctx, r); err != nil || !ok {
				t.Fatalf("ClaimKey(%s) = %v, %v", r.Key, ok, err)
			}
		}
		if _, ok, _ := s.ClaimKey(ctx, &store.IdemRecord{Key: "done", Owner: "x", Claimed: t0}); !ok {
			t.Fatal("claim of done failed")
		}
		if err := s.CompleteKey(ctx, "done", "x", []byte(`{}`), t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, err := s.ClaimedKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ClaimedKeys (-want +got):\n%s", diff)
		}
		held, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "pay:r1/c1", Owner: "reach/cc", Args: "other", Claimed: t0})
		if err != nil || ok {
			t.Fatalf("ClaimKey of a held key = %v, %v", ok, err)
		}
		if diff := cmp.Diff(want[0], held); diff != "" {
			t.Errorf("the record ClaimKey returns for a held key (-want +got):\n%s", diff)
		}
	})
}

// SettleKey puts a result in place of a claim of any owner, of another
// result, or of nothing; the record keeps what it was claimed for.
func testIdemSettle(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		exp := t0.Add(time.Hour)
		s.ClaimKey(ctx, &store.IdemRecord{Key: "held", Owner: "reach/dead", Args: "d1", Request: "r1", Frame: "01", Claimed: t0})
		s.ClaimKey(ctx, &store.IdemRecord{Key: "done", Owner: "reach/a", Args: "d2", Claimed: t0})
		s.CompleteKey(ctx, "done", "reach/a", []byte(`{"status":"success"}`), t0.Add(time.Minute))
		for _, key := range []string{"held", "done", "new"} {
			if err := s.SettleKey(ctx, key, []byte(`{"status":"error"}`), exp); err != nil {
				t.Fatalf("SettleKey(%s): %v", key, err)
			}
			r, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: key, Owner: "reach/b", Claimed: t0})
			if err != nil || ok || r.State != store.IdemDone || string(r.Result) != `{"status":"error"}` || !r.Expires.Equal(exp) {
				t.Errorf("after SettleKey(%s), ClaimKey = %+v, %v, %v; want the settled result", key, r, ok, err)
			}
			if key == "held" && (r.Args != "d1" || r.Request != "r1" || r.Frame != "01") {
				t.Errorf("the settled claim forgot what it was made for: %+v", r)
			}
		}
		if got, _ := s.ClaimedKeys(ctx); len(got) != 0 {
			t.Errorf("claims left after settling: %+v", got)
		}
	})
}

// SettleClaim settles that very claim, and nothing else: not a claim made
// since by the same owner, not a result.
func testIdemSettleClaim(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		old := &store.IdemRecord{Key: "k", Owner: "reach/a", Claimed: t0}
		s.ClaimKey(ctx, old)
		s.ReleaseKey(ctx, "k", "reach/a")
		s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "reach/a", Claimed: t0.Add(time.Second)}) // claimed again since
		for _, result := range [][]byte{nil, []byte(`{"status":"error"}`)} {
			if err := s.SettleClaim(ctx, old, result, t0.Add(time.Hour)); !errors.Is(err, store.ErrConflict) {
				t.Errorf("SettleClaim of a claim that is gone (result %s) = %v, want ErrConflict", result, err)
			}
		}
		now, _, _ := s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "reach/b", Claimed: t0})
		if now == nil || !now.Claimed.Equal(t0.Add(time.Second)) {
			t.Fatalf("the new claim was touched: %+v", now)
		}
		if err := s.SettleClaim(ctx, now, []byte(`{"status":"error"}`), t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if r, ok, _ := s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "reach/b", Claimed: t0}); ok || r.State != store.IdemDone || string(r.Result) != `{"status":"error"}` {
			t.Errorf("after SettleClaim with a result: %+v, %v", r, ok)
		}
		if err := s.SettleClaim(ctx, now, nil, time.Time{}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("SettleClaim of a settled claim = %v, want ErrConflict", err)
		}
		free := &store.IdemRecord{Key: "free", Owner: "reach/a", Claimed: t0}
		s.ClaimKey(ctx, free)
		if err := s.SettleClaim(ctx, free, nil, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.ClaimKey(ctx, &store.IdemRecord{Key: "free", Owner: "reach/b", Claimed: t0}); !ok {
			t.Error("a claim settled without a result did not free its key")
		}
	})
}

// An interrupted request is final: PutRequest does not replace it.
func testRequestInterruptedIsFinal(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		r := &store.Request{ID: "r1", Principal: "alice", State: "running", Started: t0}
		if err := s.PutRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		cut := &store.Request{ID: "r1", Principal: "alice", State: "interrupted", Cause: []byte(`{"by":"reach"}`), Started: t0, Ended: t0.Add(time.Hour)}
		if err := s.PutRequest(ctx, cut); err != nil {
			t.Fatalf("marking a running request interrupted: %v", err)
		}
		again := &store.Request{ID: "r1", Principal: "alice", State: "running", Started: t0.Add(2 * time.Hour)}
		if err := s.PutRequest(ctx, again); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("PutRequest over an interrupted request = %v, want ErrConflict", err)
		}
		got, err := s.GetRequest(ctx, "r1")
		if err != nil || got.State != "interrupted" || string(got.Cause) != `{"by":"reach"}` || !got.Started.Equal(t0) {
			t.Errorf("the interrupted request reads as %+v (%v), want it unchanged", got, err)
		}
	})
}

// A hand-off's sub-request that ended is not begun again under another
// parent or as a root (a restart forgot it; a call names its id): it would
// run outside its parent's budget and stops. Under its own parent it is.
func testRequestEndedHandoffIsFinal(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		sub := &store.Request{ID: "h1", Parent: "r1", Principal: "alice", State: "running", Budget: []byte(`{"tool_calls":4}`), Started: t0}
		if err := s.PutRequest(ctx, sub); err != nil {
			t.Fatal(err)
		}
		ended := *sub
		ended.State, ended.Ended = "ended", t0.Add(time.Minute)
		if err := s.PutRequest(ctx, &ended); err != nil {
			t.Fatalf("ending a hand-off: %v", err)
		}
		for _, parent := range []string{"", "r2"} {
			again := &store.Request{ID: "h1", Parent: parent, Principal: "alice", State: "running", Budget: []byte(`{}`), Started: t0.Add(time.Hour)}
			if err := s.PutRequest(ctx, again); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("PutRequest of the ended hand-off h1 under parent %q = %v, want ErrConflict", parent, err)
			}
		}
		got, err := s.GetRequest(ctx, "h1")
		if err != nil || got.State != "ended" || got.Parent != "r1" || string(got.Budget) != `{"tool_calls":4}` {
			t.Errorf("the ended hand-off reads as %+v (%v), want it unchanged", got, err)
		}
		again := &store.Request{ID: "h1", Parent: "r1", Principal: "alice", State: "running", Started: t0.Add(2 * time.Hour)}
		if err := s.PutRequest(ctx, again); err != nil {
			t.Errorf("PutRequest of h1 again under its parent = %v, want it begun", err)
		}
	})
}

func auditRecord(seq int64, request string) *store.AuditRecord {
	return &store.AuditRecord{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Millisecond), Request: request,
		Data:     []byte(fmt.Sprintf(`{"kind":"tool","name":"search","n":%d}`, seq)),
		PrevHash: bytes.Repeat([]byte{byte(seq - 1)}, 32), Hash: bytes.Repeat([]byte{byte(seq)}, 32)}
}

func testAuditLog(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		if seq, hash, err := s.AuditHead(ctx); err != nil || seq != 0 || hash != nil {
			t.Fatalf("AuditHead of an empty log = %d, %x, %v", seq, hash, err)
		}
		var all []*store.AuditRecord
		for seq := int64(1); seq <= 330; seq++ {
			all = append(all, auditRecord(seq, fmt.Sprintf("r%d", seq%3)))
		}
		// 1..300 in batches of sizes that cross the multi-row chunks.
		for _, b := range [][2]int{{0, 1}, {1, 40}, {40, 70}, {70, 300}} {
			var cps []store.AuditCheckpoint
			if b[1] == 70 {
				cps = []store.AuditCheckpoint{{Seq: 32, Hash: all[31].Hash, Time: t0}}
			}
			if err := s.AppendAudit(ctx, all[b[0]:b[1]], cps); err != nil {
				t.Fatal(err)
			}
		}
		// A batch that reuses a taken seq appends nothing.
		bad := []*store.AuditRecord{auditRecord(301, "r"), auditRecord(300, "r")}
		if err := s.AppendAudit(ctx, bad, nil); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("AppendAudit with a taken seq = %v, want ErrConflict", err)
		}
		// Nor does one that leaves a gap, after the head or inside itself:
		// that is no lost race, so not ErrConflict.
		for _, gap := range [][]*store.AuditRecord{
			{auditRecord(305, "r")},
			{auditRecord(301, "r"), auditRecord(303, "r")},
		} {
			if err := s.AppendAudit(ctx, gap, nil); err == nil || errors.Is(err, store.ErrConflict) {
				t.Fatalf("AppendAudit of %d after 300 with a gap = %v, want an error other than ErrConflict", len(gap), err)
			}
		}
		if seq, _, err := s.AuditHead(ctx); err != nil || seq != 300 {
			t.Fatalf("AuditHead after refused batches = %d, %v; want 300", seq, err)
		}
		if err := s.AppendAudit(ctx, all[300:], []store.AuditCheckpoint{{Seq: 96, Hash: all[95].Hash, Time: t0}, {Seq: 32, Hash: []byte("dup"), Time: t0}}); err != nil {
			t.Fatal(err)
		}
		seq, hash, err := s.AuditHead(ctx)
		if err != nil || seq != 330 || !bytes.Equal(hash, all[329].Hash) {
			t.Fatalf("AuditHead = %d, %x, %v; want 330", seq, hash, err)
		}
		var got []*store.AuditRecord
		for after := int64(0); ; {
			page, err := s.ScanAudit(ctx, after, 70)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].Seq
		}
		if diff := cmp.Diff(all, got); diff != "" {
			t.Errorf("ScanAudit pages (-want +got):\n%s", diff)
		}
		var want []*store.AuditRecord
		for _, e := range all {
			if e.Request == "r1" {
				want = append(want, e)
			}
		}
		got, err = s.RequestAudit(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("RequestAudit (-want +got):\n%s", diff)
		}
		cps, err := s.AuditCheckpoints(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantCps := []store.AuditCheckpoint{{Seq: 32, Hash: all[31].Hash, Time: t0}, {Seq: 96, Hash: all[95].Hash, Time: t0}}
		if diff := cmp.Diff(wantCps, cps); diff != "" {
			t.Errorf("AuditCheckpoints (-want +got):\n%s", diff)
		}
	})
}

func testDeadLetters(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		// d1 keeps its owner, d2 has none (a request of no owner's):
		// listed as added, the update of d1's state leaves its owner.
		d1 := &store.DeadLetter{Request: "r1", Frame: "01", Tool: "refund", Args: []byte(`{"id":1}`), Error: "timeout", Attempts: 3,
			Principal: "alice", Tenant: "acme"}
		d2 := &store.DeadLetter{Request: "r2", Frame: "02", Tool: "unbook", Error: "500", Attempts: 1}
		for _, d := range []*store.DeadLetter{d1, d2} {
			if _, err := s.AddDeadLetter(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		if d1.ID == 0 || d2.ID <= d1.ID || d1.State != store.DeadOpen {
			t.Fatalf("ids %d, %d, state %q", d1.ID, d2.ID, d1.State)
		}
		d1.State, d1.Note, d1.Attempts = store.DeadResolved, "refunded by hand", 4
		if err := s.UpdateDeadLetter(ctx, d1); err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateDeadLetter(ctx, &store.DeadLetter{ID: 99, State: store.DeadResolved}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("UpdateDeadLetter(missing) = %v, want ErrNotFound", err)
		}
		open, err := s.ListDeadLetters(ctx, store.DeadOpen)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]*store.DeadLetter{d2}, open); diff != "" {
			t.Errorf("open dead letters (-want +got):\n%s", diff)
		}
		all, _ := s.ListDeadLetters(ctx, "")
		if diff := cmp.Diff([]*store.DeadLetter{d1, d2}, all); diff != "" {
			t.Errorf("all dead letters (-want +got):\n%s", diff)
		}
	})
}

// TestTakeDeadLetter: one action takes an open dead letter; a second one
// meanwhile gets ErrConflict, one on a settled or missing dead letter
// ErrNotFound; settled back open, it can be taken again. The taker is
// recorded with the take, listed while it is taken, and dropped by any
// later change (given back open, it is no one's).
func testTakeDeadLetter(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		d := &store.DeadLetter{Request: "r1", Frame: "01", Tool: "refund", Args: []byte(`{"id":1}`), Error: "timeout", Attempts: 3,
			Principal: "alice", Tenant: "acme"}
		if _, err := s.AddDeadLetter(ctx, d); err != nil {
			t.Fatal(err)
		}
		got, err := s.TakeDeadLetter(ctx, d.ID, "a/1")
		if err != nil || got.State != store.DeadTaken || got.Tool != "refund" || string(got.Args) != `{"id":1}` || got.Attempts != 3 ||
			got.Taker != "a/1" || got.Principal != "alice" || got.Tenant != "acme" {
			t.Fatalf("TakeDeadLetter = %+v, %v; want it taken by a/1, of alice in acme", got, err)
		}
		if ls, err := s.ListDeadLetters(ctx, store.DeadTaken); err != nil || len(ls) != 1 || ls[0].Taker != "a/1" {
			t.Errorf("the taken dead letters = %+v, %v; want the one, taken by a/1", ls, err)
		}
		if _, err := s.TakeDeadLetter(ctx, d.ID, "b/1"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a second take = %v, want ErrConflict", err)
		}
		if ls, err := s.ListDeadLetters(ctx, ""); err != nil || len(ls) != 1 || ls[0].Taker != "a/1" {
			t.Errorf("the dead letters after a second take failed = %+v, %v; want it taken by a/1 still", ls, err)
		}
		if _, err := s.TakeDeadLetter(ctx, 99, "a/1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("taking a missing one = %v, want ErrNotFound", err)
		}
		got.State = store.DeadOpen
		if err := s.UpdateDeadLetter(ctx, got); err != nil {
			t.Fatal(err)
		}
		if ls, err := s.ListDeadLetters(ctx, store.DeadOpen); err != nil || len(ls) != 1 || ls[0].Taker != "" {
			t.Errorf("the open dead letters once given back = %+v, %v; want the one, with no taker", ls, err)
		}
		if again, err := s.TakeDeadLetter(ctx, d.ID, ""); err != nil || again.State != store.DeadTaken || again.Taker != "" {
			t.Fatalf("taking it again once open, with no taker = %+v, %v", again, err)
		}
		got.State = store.DeadResolved
		if err := s.UpdateDeadLetter(ctx, got); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TakeDeadLetter(ctx, d.ID, "a/1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("taking a resolved one = %v, want ErrNotFound", err)
		}
	})
}

func testClosed(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		calls := map[string]func() error{
			"PutRequest":     func() error { return s.PutRequest(ctx, &store.Request{ID: "x"}) },
			"GetRequest":     func() error { _, err := s.GetRequest(ctx, "x"); return err },
			"TakeDeadLetter": func() error { _, err := s.TakeDeadLetter(ctx, 1, ""); return err },
			"ListRequests":   func() error { _, err := s.ListRequests(ctx, store.RequestFilter{}); return err },
			"PutFrame":       func() error { return s.PutFrame(ctx, &store.Frame{Request: "x", Frame: "01"}) },
			"RequestFrames":  func() error { _, err := s.RequestFrames(ctx, "x"); return err },
			"OpenFrames":     func() error { _, err := s.OpenFrames(ctx); return err },
			"ClaimKey": func() error {
				_, _, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k", Owner: "a", Claimed: t0})
				return err
			},
			"SettleKey":   func() error { return s.SettleKey(ctx, "k", nil, t0) },
			"SettleClaim": func() error { return s.SettleClaim(ctx, &store.IdemRecord{Key: "k"}, nil, t0) },
			"ClaimedKeys": func() error { _, err := s.ClaimedKeys(ctx); return err },
			"CompleteKey": func() error { return s.CompleteKey(ctx, "k", "a", nil, t0) },
			"ReleaseKey":  func() error { return s.ReleaseKey(ctx, "k", "a") },
			"SweepKeys":   func() error { _, err := s.SweepKeys(ctx, t0); return err },
			"AppendAudit": func() error {
				return s.AppendAudit(ctx, []*store.AuditRecord{auditRecord(1, "x")}, nil)
			},
			"AuditHead":        func() error { _, _, err := s.AuditHead(ctx); return err },
			"ScanAudit":        func() error { _, err := s.ScanAudit(ctx, 0, 10); return err },
			"RequestAudit":     func() error { _, err := s.RequestAudit(ctx, "x"); return err },
			"AuditCheckpoints": func() error { _, err := s.AuditCheckpoints(ctx); return err },
			"AddDeadLetter":    func() error { _, err := s.AddDeadLetter(ctx, &store.DeadLetter{Request: "x"}); return err },
			"ListDeadLetters":  func() error { _, err := s.ListDeadLetters(ctx, ""); return err },
			"UpdateDeadLetter": func() error { return s.UpdateDeadLetter(ctx, &store.DeadLetter{ID: 1, State: store.DeadResolved}) },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, store.ErrClosed) {
				t.Errorf("%s after Close = %v, want ErrClosed", name, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Errorf("a second Close = %v, want nil", err)
		}
	})
}

// RequestAudit finds a request's records whether or not the store has
// indexed them yet (SQLite's indexes every 4096 records).
func testRequestAuditIndex(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		const n = 2*4096 + 1000
		want := map[string][]int64{}
		var batch []*store.AuditRecord
		for seq := int64(1); seq <= n; seq++ {
			req := fmt.Sprintf("r%d", seq%7)
			if seq == n-1 {
				req = "late"
			} else if seq == 3 {
				req = "early"
			}
			want[req] = append(want[req], seq)
			batch = append(batch, auditRecord(seq, req))
			if len(batch) == 300 || seq == n {
				if err := s.AppendAudit(ctx, batch, nil); err != nil {
					t.Fatal(err)
				}
				batch = nil
			}
		}
		for req, seqs := range want {
			recs, err := s.RequestAudit(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range recs {
				if r.Request != req {
					t.Fatalf("RequestAudit(%s) returned a record of %s", req, r.Request)
				}
				got = append(got, r.Seq)
			}
			if diff := cmp.Diff(seqs, got); diff != "" {
				t.Errorf("RequestAudit(%s) seqs (-want +got):\n%s", req, diff)
			}
		}
		// RequestsAudit, a page of a set of requests' records, whether
		// indexed, partly or not yet, reads what RequestAudit's do.
		ra, ok := s.(store.RequestsAuditor)
		if !ok {
			return
		}
		sets := [][]string{{"r1"}, {"r1", "r3", "late"}, {"early", "late"}, {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "early", "late"}, {"none"}, {"early", "none"}}
		pages := []struct {
			after, upTo int64
			limit       int
		}{{0, n, 10}, {0, n, n}, {2, n, 1}, {4000, n, 50}, {4090, 8200, 300}, {8190, n, 5000}, {n - 5, n - 1, 10}, {n, n + 10, 10}, {100, 50, 10}}
		for _, set := range sets {
			var all []int64
			for _, req := range set {
				all = append(all, want[req]...)
			}
			slices.Sort(all)
			for _, pg := range pages {
				var exp []int64
				for _, seq := range all {
					if seq > pg.after && seq <= pg.upTo && len(exp) < pg.limit {
						exp = append(exp, seq)
					}
				}
				recs, err := ra.RequestsAudit(ctx, set, pg.after, pg.upTo, pg.limit)
				if err != nil {
					t.Fatal(err)
				}
				var got []int64
				for _, r := range recs {
					if !slices.Contains(set, r.Request) {
						t.Fatalf("RequestsAudit(%v) returned a record of %s", set, r.Request)
					}
					got = append(got, r.Seq)
				}
				if diff := cmp.Diff(exp, got); diff != "" {
					t.Errorf("RequestsAudit(%v, %d, %d, %d) seqs (-want +got):\n%s", set, pg.after, pg.upTo, pg.limit, diff)
				}
			}
		}
	})
}

// Queued writes take effect in the order they were queued, before a
// write that waits.
func testQueuedWritesTakeEffectInOrder(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		now := time.Now()
		claim := &store.IdemRecord{Key: "k", Owner: "a/1", Args: "d", Claimed: now, Expires: now.Add(time.Hour)}
		if _, ok, err := s.ClaimKey(ctx, claim); err != nil || !ok {
			t.Fatalf("ClaimKey = %v, %v", ok, err)
		}
		// Queued: the completion and the checkpoint's end. A claim made
		// after them sees the result, though nobody waited for it.
		s.QueueFrame(&store.Frame{Request: "r", Frame: "0000000000000001", State: "completed", Started: now})
		s.QueueCompleteKey("k", "a/1", []byte(`{"status":"success"}`), now.Add(time.Hour))
		claim.Owner, claim.Claimed = "a/2", time.Now()
		rec, ok, err := s.ClaimKey(ctx, claim)
		if err != nil || ok || rec.State != store.IdemDone || string(rec.Result) != `{"status":"success"}` {
			t.Fatalf("ClaimKey after a queued completion = %+v, %v, %v; want the recorded result", rec, ok, err)
		}
		// The claim waited for its commit, which holds what was queued before it.
		frames, err := s.RequestFrames(ctx, "r")
		if err != nil || len(frames) != 1 || frames[0].State != "completed" {
			t.Fatalf("RequestFrames = %+v, %v; want the queued frame", frames, err)
		}
		// A queued release frees the key for the next claim.
		if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k2", Owner: "a/1", Claimed: now}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		s.QueueReleaseKey("k2", "a/1")
		if _, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: "k2", Owner: "a/2", Claimed: now}); err != nil || !ok {
			t.Fatalf("ClaimKey after a queued release = %v, %v; want claimed", ok, err)
		}
	})
}

// RequestTree lists a request and its sub-requests at every depth, each
// once, none of another tree's, up to its limit.
// testRequestsByIDPrefix: RequestFilter.IDPrefix keeps the requests whose
// id begins with it, byte for byte, whatever the store's collation makes
// of "/" (a recovery reads a request's compensations so).
func testRequestsByIDPrefix(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		for _, id := range []string{"r", "r/compensate/a1", "r/compensate/b2", "r/compensate", "r/compensateX", "R/compensate/c3",
			"rx/compensate/d4", "r/compensate0", "é/compensate/e5", "r/retry/f6"} {
			if err := s.PutRequest(ctx, &store.Request{ID: id, State: "ended", Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		for prefix, want := range map[string][]string{
			"r/compensate/": {"r/compensate/a1", "r/compensate/b2"},
			"é/compensate/": {"é/compensate/e5"},
			"nothing/":      nil,
		} {
			rs, err := s.ListRequests(ctx, store.RequestFilter{IDPrefix: prefix, Roots: true, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("ListRequests(IDPrefix %q) = %q, want %q", prefix, got, want)
			}
		}
	})
}

func testRequestTree(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		rt, ok := s.(store.RequestTreer)
		if !ok {
			t.Skip("the store lists no tree in one read")
		}
		ctx := t.Context()
		for _, r := range [][2]string{{"root", ""}, {"a", "root"}, {"b", "root"}, {"c", "a"}, {"d", "c"}, {"x", ""}, {"y", "x"}} {
			if err := s.PutRequest(ctx, &store.Request{ID: r[0], Parent: r[1], State: "running", Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			root  string
			limit int
			want  []string
		}{{"root", 10, []string{"a", "b", "c", "d", "root"}}, {"a", 10, []string{"a", "c", "d"}}, {"d", 10, []string{"d"}}, {"new", 10, []string{"new"}}} {
			got, err := rt.RequestTree(ctx, c.root, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("RequestTree(%s) (-want +got):\n%s", c.root, diff)
			}
		}
		got, err := rt.RequestTree(ctx, "root", 3)
		if err != nil || len(got) != 3 || !slices.Contains(got, "root") {
			t.Fatalf("RequestTree(root, 3) = %v, %v; want 3 of its 5 with root", got, err)
		}
	})
}

// The newest records whose events match, filtered in the query: full
// pages of a tenant whose events are few among others', an event that
// only names a tenant in its message not matched, and the cursor.
func testAuditMatch(t *testing.T, open Opener) {
	contract(t, open, func(t *testing.T, s store.Store) {
		am, ok := s.(store.AuditMatcher)
		if !ok {
			return
		}
		ctx := t.Context()
		const n = 3000
		type fields struct{ tenant, principal, name string }
		evs := map[int64]fields{}
		var batch []*store.AuditRecord
		for seq := int64(1); seq <= n; seq++ {
			f := fields{"globex", "bob", "search"}
			switch {
			case seq%97 == 0:
				f = fields{"acme", "alice", "refund"}
			case seq%89 == 0:
				f = fields{"acme", "carol", "search"}
			case seq%7 == 0:
				f = fields{"", "root", "search"}
			}
			evs[seq] = f
			r := auditRecord(seq, fmt.Sprintf("r%d", seq%5))
			data := fmt.Sprintf(`{"kind":"tool","name":%q,"principal":%q,"message":"\"tenant\":\"acme\"","n":%d`, f.name, f.principal, seq)
			if f.tenant != "" {
				data += fmt.Sprintf(`,"tenant":%q`, f.tenant)
			}
			r.Data = []byte(data + "}")
			batch = append(batch, r)
			if len(batch) == 500 {
				if err := s.AppendAudit(ctx, batch, nil); err != nil {
					t.Fatal(err)
				}
				batch = nil
			}
		}
		for _, c := range []struct {
			m      store.AuditMatch
			before int64
			limit  int
		}{
			{store.AuditMatch{Tenant: "acme"}, 0, 10},
			{store.AuditMatch{Tenant: "acme"}, 0, 1000},
			{store.AuditMatch{Tenant: "acme"}, 500, 3},
			{store.AuditMatch{Tenant: "acme", Principal: "alice"}, 0, 5},
			{store.AuditMatch{Tenant: "acme", Name: "search"}, 0, 100},
			{store.AuditMatch{Tenant: "acme", Principal: "alice", Name: "search"}, 0, 10},
			{store.AuditMatch{Tenant: "initech"}, 0, 10},
			{store.AuditMatch{Principal: "root"}, 100, 4},
			{store.AuditMatch{Tenant: "globex"}, 0, 0},
			// After bounds the read: the matches at or below it are not read,
			// the page ends short.
			{store.AuditMatch{Tenant: "acme", After: 2000}, 0, 1000},
			{store.AuditMatch{Tenant: "acme", After: 100}, 500, 1000},
			{store.AuditMatch{Principal: "nobody", After: n - 1000}, n + 1, 10},
			{store.AuditMatch{Tenant: "acme", Principal: "alice", After: 1}, 0, 5},
		} {
			var want []int64
			for seq := int64(n); seq >= 1 && len(want) < c.limit; seq-- {
				f := evs[seq]
				if (c.before == 0 || seq < c.before) && seq > c.m.After && (c.m.Tenant == "" || f.tenant == c.m.Tenant) &&
					(c.m.Principal == "" || f.principal == c.m.Principal) && (c.m.Name == "" || f.name == c.m.Name) {
					want = append(want, seq)
				}
			}
			slices.Reverse(want)
			recs, err := am.MatchAudit(ctx, c.m, c.before, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range recs {
				got = append(got, r.Seq)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("MatchAudit(%+v, %d, %d) seqs (-want +got):\n%s", c.m, c.before, c.limit, diff)
			}
		}
	})
}
