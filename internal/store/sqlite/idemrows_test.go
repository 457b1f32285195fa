package sqlite

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentreach/reach/internal/store"
)

// TestSQLiteMigratesIdemRecordsToRowid: a store of schema 6 (idempotency
// records keyed by their key, WITHOUT ROWID) holding what a crash leaves
// (a call claimed and executing, a claim whose checkpoint never came, a
// call completed whose result was not recorded) and a recorded result is
// migrated when a newer binary opens it; recovery then settles each claim
// by its checkpoint, the crash-left call's checkpoint is found open, the
// recorded result still answers its key, and a new claim works.
func TestSQLiteMigratesIdemRecordsToRowid(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := oldDatabase(t, dir, 6)
	t0 := time.Now().Add(-time.Minute).UnixNano()
	dead := "reach/0011223344556677" // a life of this instance that crashed
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(key, frame, state string, result []byte, expires int64) {
		exec(`INSERT INTO idempotency (key, owner, state, args, request, frame, result, claimed, expires) VALUES (?, ?, ?, ?, 'r1', ?, ?, ?, ?)`,
			key, dead, state, "d-"+key, frame, result, t0, expires)
	}
	frame := func(id, state string) {
		exec(`INSERT INTO frames (request, frame, kind, name, idem_key, state, args, started, updated) VALUES ('r1', ?, 'tool', 'pay', ?, ?, '{"amount":1}', ?, ?)`,
			id, "k-"+id, state, t0, t0)
	}
	claim("k-01", "01", store.IdemClaimed, nil, t0+int64(time.Hour)) // ran when the crash came
	frame("01", "executing")
	claim("k-02", "02", store.IdemClaimed, nil, t0+int64(time.Hour)) // its checkpoint never came
	claim("k-03", "03", store.IdemClaimed, nil, t0+int64(time.Hour)) // completed, its result not recorded
	frame("03", "completed")
	claim("k-04", "04", store.IdemDone, []byte(`{"status":"success","data":"R-4"}`), time.Now().Add(time.Hour).UnixNano())
	frame("04", "completed")
	w.Close()

	s := openSQLite(t, dir, nil)
	if v, err := s.SchemaVersion(ctx); err != nil || v < 7 {
		t.Fatalf("SchemaVersion = %d, %v; want 7 or later", v, err)
	}
	var ddl string
	if err := s.r.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'idempotency'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(ddl), "WITHOUT ROWID") {
		t.Errorf("the migrated idempotency table is still WITHOUT ROWID:\n%s", ddl)
	}
	claims, err := s.ClaimedKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range claims {
		keys = append(keys, c.Key+" "+c.Request+"/"+c.Frame+" "+c.Args)
	}
	if diff := cmp.Diff([]string{"k-01 r1/01 d-k-01", "k-02 r1/02 d-k-02", "k-03 r1/03 d-k-03"}, keys); diff != "" {
		t.Errorf("ClaimedKeys after the migration (-want +got):\n%s", diff)
	}
	open, err := s.OpenFrames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].Frame != "01" {
		t.Errorf("OpenFrames after the migration = %d frames, want frame 01", len(open))
	}

	idem := store.NewIdempotency(s, nil)
	settled, err := idem.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]string{}
	for _, st := range settled {
		outcomes[st.Claim.Key] = st.Outcome
	}
	want := map[string]string{"k-01": store.SettledInterrupted, "k-02": store.SettledReleased, "k-03": store.SettledResultLost}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("recovery settled (-want +got):\n%s", diff)
	}
	if claims, err := s.ClaimedKeys(ctx); err != nil || len(claims) != 0 {
		t.Errorf("ClaimedKeys after recovery = %d claims, %v; want none", len(claims), err)
	}

	// What each key answers now: a new claim of each, by this life.
	now := time.Now()
	for _, tt := range []struct {
		key, state, code string
		claimed          bool
	}{
		{"k-01", store.IdemDone, "interrupted", false},
		{"k-02", store.IdemClaimed, "", true},
		{"k-03", store.IdemDone, "result_lost", false},
		{"k-04", store.IdemDone, "", false},
		{"k-05", store.IdemClaimed, "", true},
	} {
		rec, ok, err := s.ClaimKey(ctx, &store.IdemRecord{Key: tt.key, Owner: idem.Owner(), Args: "d-" + tt.key, Request: "r2",
			Claimed: now, Expires: now.Add(time.Hour)})
		if err != nil {
			t.Fatalf("ClaimKey(%s): %v", tt.key, err)
		}
		if ok != tt.claimed {
			t.Errorf("ClaimKey(%s) claimed = %v, want %v", tt.key, ok, tt.claimed)
			continue
		}
		if ok {
			continue
		}
		var res struct {
			Data  string `json:"data"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Result, &res); err != nil {
			t.Fatalf("ClaimKey(%s): the result %q: %v", tt.key, rec.Result, err)
		}
		code := ""
		if res.Error != nil {
			code = res.Error.Code
		}
		if rec.State != tt.state || code != tt.code {
			t.Errorf("ClaimKey(%s) = %s, error %q; want %s, error %q", tt.key, rec.State, code, tt.state, tt.code)
		}
		if tt.key == "k-04" && res.Data != "R-4" {
			t.Errorf("ClaimKey(k-04) answers %q, want the recorded result", rec.Result)
		}
	}
	// The claims this life took are listed in the order they were claimed.
	claims, err = s.ClaimedKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 2 || claims[0].Key != "k-02" || claims[1].Key != "k-05" {
		t.Errorf("ClaimedKeys = %d claims (%v), want k-02, k-05", len(claims), err)
	}
}
