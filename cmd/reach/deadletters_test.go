package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
)

func TestDeadLettersCLI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := st.AddDeadLetter(ctx, &store.DeadLetter{Request: "r1", Tool: "cancel_hotel", Args: []byte(`{"ref":"R1"}`), Error: "hotel API down", Attempts: 3})
	st.Close()
	out, err := runCLI(t, "deadletters", "--data", dir)
	if err != nil || !strings.Contains(out, "cancel_hotel") || !strings.Contains(out, "hotel API down") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "deadletters", "dismiss", "1", "--data", dir); err == nil || !strings.Contains(err.Error(), "--note") {
		t.Fatalf("dismiss without a note: %v", err)
	}
	if out, err := runCLI(t, "deadletters", "dismiss", "1", "--data", dir, "--note", "cancelled by phone", "--by", "ops"); err != nil || !strings.Contains(out, "dismissed by ops") {
		t.Fatalf("dismiss: %v %s", err, out)
	}
	if out, _ := runCLI(t, "deadletters", "list", "--data", dir); !strings.Contains(out, "no dead letters") {
		t.Errorf("open list after dismiss: %s", out)
	}
	if out, _ := runCLI(t, "deadletters", "list", "--state", "all", "--data", dir); !strings.Contains(out, "resolved") {
		t.Errorf("all: %s", out)
	}
	// The dismissal is audited and the chain verifies.
	st, _ = store.Open(ctx, dir, nil)
	defer st.Close()
	evs, _ := audit.Show(ctx, st, "r1")
	if len(evs) != 1 || evs[0].Decision != "dismissed" || evs[0].Principal != "ops" {
		t.Errorf("audit: %+v", evs)
	}
	if _, err := audit.Verify(ctx, st); err != nil {
		t.Error(err)
	}
	_ = id
}
