package main

import (
	"context"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/gateway"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
)

func TestDeadLettersCLI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := st.AddDeadLetter(ctx, &store.DeadLetter{Request: "r1", Tool: "cancel_hotel", Args: []byte(`{"ref":"R1"}`), Error: "hotel API down", Attempts: 3,
		Principal: "alice", Tenant: "acme"})
	st.Close()
	out, err := runCLI(t, "deadletters", "--data", dir)
	if err != nil || !strings.Contains(out, "cancel_hotel") || !strings.Contains(out, "hotel API down") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	// A state that is none is refused, not answered "No dead letters".
	if out, err := runCLI(t, "deadletters", "--data", dir, "--state", "opne"); err == nil || !strings.Contains(err.Error(), "want open, retried, resolved, taken or all") {
		t.Errorf("--state opne: %v %q; want an error naming the states", err, out)
	}
	// No gateway answers at --api: the dismissal is written to the store.
	down := "http://" + freeAddr(t) // nobody listens there, and no other test takes it (testport)
	if _, err := runCLI(t, "deadletters", "dismiss", "1", "--data", dir, "--api", down); err == nil || !strings.Contains(err.Error(), "--note") {
		t.Fatalf("dismiss without a note: %v", err)
	}
	if out, err := runCLI(t, "deadletters", "dismiss", "1", "--data", dir, "--note", "cancelled by phone", "--by", "ops", "--api", down); err != nil || !strings.Contains(out, "dismissed by ops") {
		t.Fatalf("dismiss: %v %s", err, out)
	}
	if _, err := runCLI(t, "deadletters", "dismiss", "dl-1", "--data", dir, "--note", "again", "--api", down); err == nil || !strings.Contains(err.Error(), "no open dead letter") {
		t.Errorf("dismissing it again: %v, want no open dead letter", err)
	}
	if out, _ := runCLI(t, "deadletters", "list", "--data", dir); !strings.Contains(out, "no dead letters") {
		t.Errorf("open list after dismiss: %s", out)
	}
	if out, _ := runCLI(t, "deadletters", "list", "--state", "all", "--data", dir); !strings.Contains(out, "resolved") {
		t.Errorf("all: %s", out)
	}
	// The dismissal is audited, in the dead letter's tenant with who
	// dismissed it, and the chain verifies.
	st, _ = sqlite.Open(ctx, dir, nil)
	defer st.Close()
	evs, _ := audit.Show(ctx, st, "r1")
	if len(evs) != 1 || evs[0].Decision != "dismissed" || evs[0].Principal != "ops" || evs[0].Tenant != "acme" {
		t.Errorf("audit: %+v", evs)
	}
	if _, err := audit.Verify(ctx, st); err != nil {
		t.Error(err)
	}
	_ = id
}

// TestDeadLetterDismissCLIThroughGateway: with a gateway running, dismiss
// goes through it (so its queue lets go of the dead letter too) and does
// not fall back to the store when the gateway refuses.
func TestDeadLetterDismissCLIThroughGateway(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := st.AddDeadLetter(t.Context(), &store.DeadLetter{Request: "r1", Frame: "00000000000000ab", Tool: "cancel_hotel",
		Args: []byte(`{"ref":"R1"}`), Error: "hotel API down", Attempts: 3})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("data: "+dir+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	if st, err = sqlite.Open(t.Context(), dir, nil); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := strconv.FormatInt(id, 10)
	if _, _, err := runCmd(t, newDeadLetters, "dismiss", ids, "--data", dir, "--api", srv.URL); err == nil || !strings.Contains(err.Error(), "--note") {
		t.Fatalf("dismiss without a note: %v", err)
	}
	out, _, err := runCmd(t, newDeadLetters, "dismiss", ids, "--data", dir, "--api", srv.URL, "--note", "cancelled by phone")
	if err != nil || !strings.Contains(out, "by the gateway") {
		t.Fatalf("dismiss through the gateway: %v %s", err, out)
	}
	ds, err := st.ListDeadLetters(t.Context(), "")
	if err != nil || len(ds) != 1 || ds[0].State != store.DeadResolved || !strings.Contains(ds[0].Note, "cancelled by phone") {
		t.Fatalf("stored after the dismissal: %+v (%v)", ds, err)
	}
	// The gateway refuses a second dismissal: the CLI says so and writes nothing.
	if _, _, err := runCmd(t, newDeadLetters, "dismiss", ids, "--data", dir, "--api", srv.URL, "--note", "again", "--by", "mallory"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("second dismissal: %v, want the gateway's 404", err)
	}
	if ds, _ := st.ListDeadLetters(t.Context(), ""); len(ds) != 1 || strings.Contains(ds[0].Note, "mallory") {
		t.Errorf("the refused dismissal changed the store: %+v", ds)
	}
}

// TestDeadLettersCLIMasksSecrets: the store keeps an undo's arguments as
// registered, for its retry; the list shows them, and the error, masked,
// in a table and as JSON.
func TestDeadLettersCLIMasksSecrets(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddDeadLetter(ctx, &store.DeadLetter{Request: "r2", Tool: "restore_login", Args: []byte(`{"user":"u1","password":"hunter2-secret"}`),
		Error: "refused password=hunter2-secret", Attempts: 3}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	out, err := runCLI(t, "deadletters", "--data", dir)
	if err != nil || !strings.Contains(out, "restore_login") || !strings.Contains(out, "u1") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	js, err := runCLI(t, "deadletters", "--data", dir, "--json")
	if err != nil || !strings.Contains(js, "restore_login") || !strings.Contains(js, "u1") {
		t.Fatalf("list --json: %v\n%s", err, js)
	}
	if strings.Contains(out+js, "hunter2") {
		t.Errorf("the list shows a dead letter's secret:\n%s\n%s", out, js)
	}
	// The store still holds it as registered, for the undo's retry.
	st, err = sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ds, err := st.ListDeadLetters(ctx, "")
	if err != nil || len(ds) != 1 || !strings.Contains(string(ds[0].Args), "hunter2-secret") {
		t.Errorf("stored: %+v %v", ds, err)
	}
}

// TestDeadLettersNoStore: list in a folder with no store says which file
// is missing and that --data names another, as the audit commands do (it
// said "stat .reach/reach.db: no such file or directory").
func TestDeadLettersNoStore(t *testing.T) {
	data := t.TempDir()
	err := run(t.Context(), []string{"deadletters", "list", "--data", data}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "does not exist (use --data") {
		t.Errorf("deadletters list without a store: %v", err)
	}
}

// TestDeadLettersListOnPostgres: gateways on a PostgreSQL store keep their
// dead letters there; reach deadletters list --store reads them, masked as
// from a data folder (it read a data folder's SQLite only, and said "no
// store" there).
func TestDeadLettersListOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	url := pgtest.Own(t).URL("postgres")
	pg, err := postgres.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pg.AddDeadLetter(t.Context(), &store.DeadLetter{Request: "r1", Tool: "cancel_hotel", Args: []byte(`{"ref":"R1","password":"hunter2-secret"}`),
		Error: "hotel API down", Attempts: 3}); err != nil {
		t.Fatal(err)
	}
	pg.Close()
	for _, args := range [][]string{{"deadletters", "--store", url}, {"deadletters", "list", "--store", url, "--json"}} {
		out, err := runCLI(t, args...)
		if err != nil || !strings.Contains(out, "cancel_hotel") || !strings.Contains(out, "hotel API down") || strings.Contains(out, "hunter2") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
}
