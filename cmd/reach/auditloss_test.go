package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// failFirst fails the first append (a disk full for a moment).
type failFirst struct {
	store.AuditLog
	n atomic.Int32
}

func (f *failFirst) AppendAudit(ctx context.Context, recs []*store.AuditRecord, cps []store.AuditCheckpoint) error {
	if f.n.Add(1) == 1 {
		return errors.New("disk full")
	}
	return f.AuditLog.AppendAudit(ctx, recs, cps)
}

// reach audit verify says how many recorded events the log lost before
// writing them (its loss notes), and still says the chain is whole:
// they were never chained.
func TestAuditVerifyCountsLosses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.New(ctx, &failFirst{AuditLog: st}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log.Record(ctx, &reach.Event{Time: time.Now(), Request: "r", Kind: reach.ToolFrame, Name: "t", State: reach.Completed})
	if err := log.Flush(ctx); err == nil {
		t.Fatal("the first commit did not fail")
	}
	if _, err := log.Append(ctx, &audit.Event{Request: "r", Kind: "tool", Name: "u", Decision: "completed"}); err != nil {
		t.Fatal(err)
	}
	log.Close()
	st.Close()

	out, err := runCLI(t, "audit", "verify", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "chain ok: 2 events") || !strings.Contains(out, "1 recorded events were lost before they were written") {
		t.Errorf("verify printed %q, want chain ok: 2 events (the note and the append) and 1 lost", out)
	}
	out, err = runCLI(t, "audit", "verify", "--json", "--data", dir)
	var got struct {
		OK        bool  `json:"ok"`
		Events    int64 `json:"events"`
		Lost      int64 `json:"lost"`
		LossNotes int   `json:"loss_notes"`
	}
	if jerr := json.Unmarshal([]byte(out), &got); err != nil || jerr != nil || !got.OK || got.Events != 2 || got.Lost != 1 || got.LossNotes != 1 {
		t.Errorf("verify --json: %s, %v; want ok, 2 events, 1 lost in 1 note", out, err)
	}
}
