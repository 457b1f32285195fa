package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// auditData writes a small audit log into a new data folder.
func auditData(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 11, 30, 8, 14, 3, 123e6, time.UTC)
	for _, e := range []*audit.Event{
		{Time: at, Request: "req_a", Frame: "000000000000000a", Kind: "model", Name: "gpt-4o", Decision: "executing"},
		{Time: at.Add(time.Millisecond), Request: "req_a", Frame: "000000000000000b", Parent: "000000000000000a",
			Kind: "tool", Name: "search_kb", Decision: "completed", Args: []byte(`{"query":"refund policy","password":"[REDACTED]"}`), // masked by the runtime
			Result: `{"hits":3}`, Latency: 1200 * time.Microsecond},
		{Time: at.Add(2 * time.Millisecond), Request: "req_b", Frame: "000000000000000c", Kind: "tool", Name: "other"},
		{Time: at.Add(3 * time.Millisecond), Request: "req_a", Frame: "000000000000000d", Parent: "000000000000000a",
			Kind: "tool", Name: "search_kb", Decision: "refused", Guard: "graph", Code: "cycle",
			Message: "This would create a cycle: search_kb is already on your call stack.", Args: []byte(`{"query":"refund policy"}`)},
		{Time: at.Add(4 * time.Millisecond), Request: "req_a", Frame: "000000000000000a", Kind: "model", Name: "gpt-4o",
			Decision: "completed", Tokens: 1280, Latency: 2 * time.Second},
	} {
		if _, err := log.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runCLI(t *testing.T, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, &out, &errOut)
	return out.String(), err
}

func TestAuditVerifyCLI(t *testing.T) {
	dir := auditData(t)
	out, err := runCLI(t, "audit", "verify", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "chain ok: 5 events (head sha256:") {
		t.Errorf("verify printed %q", out)
	}

	db, err := sqlite.OpenFile(filepath.Join(dir, sqlite.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DROP TRIGGER audit_no_update; UPDATE audit SET event = json_set(event, '$.decision', 'completed') WHERE seq = 4`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, err = runCLI(t, "audit", "verify", "--data", dir)
	if err == nil || !strings.Contains(err.Error(), "seq 4 (edited)") || out != "" {
		t.Errorf("verify of an edited log: %q, %v; want an error naming seq 4 as edited", out, err)
	}
	// --json on a broken chain, through the binary: it panicked (Verify
	// returns no report with the error) instead of saying which event.
	cmd := exec.Command(exe(t), "audit", "verify", "--json", "--data", dir)
	cmd.Env = append(os.Environ(), "REACH_AS_CLI=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	var got struct {
		OK      bool   `json:"ok"`
		Seq     int64  `json:"seq"`
		Problem string `json:"problem"`
		Error   string `json:"error"`
	}
	if jerr := json.Unmarshal(b, &got); err == nil || jerr != nil || got.OK || got.Seq != 4 || got.Problem != "edited" || !strings.Contains(got.Error, "seq 4") || strings.Contains(stderr.String(), "panic") {
		t.Errorf("verify --json of an edited log: exit %v, stdout %s, stderr %s; want a non-zero exit and {ok: false, seq: 4, problem: edited}", err, b, stderr.String())
	}

	if _, err := runCLI(t, "audit", "verify", "--data", filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "no audit log in") {
		t.Errorf("verify of a missing folder = %v", err)
	}
}

func TestAuditShowCLI(t *testing.T) {
	dir := auditData(t)
	out, err := runCLI(t, "audit", "show", "req_a", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reach audit show req_a:\n%s", out)
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("show printed %d lines, want a header and 4 events:\n%s", len(lines), out)
	}
	for i, want := range [][]string{
		{"SEQ", "TIME", "FRAME", "PARENT", "KIND", "NAME", "DECISION", "ARGS", "RESULT", "TOKENS", "LATENCY", "WHY"},
		{"1", "2025-11-30T08:14:03.123Z", "000000000000000a", "-", "model", "gpt-4o", "executing"},
		{"2", "000000000000000b", "000000000000000a", "search_kb", "completed", `{"query":"refund policy","password":"[REDACTED]`, `{"hits":3}`, "1.2ms"},
		{"4", "search_kb", "refused", "graph/cycle: This would create a cycle"},
		{"5", "completed", "1280", "2s"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}

	out, err = runCLI(t, "audit", "show", "req_a", "--json", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Seq  int64  `json:"seq"`
			Name string `json:"name"`
			Hash string `json:"hash"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Name == "" || !strings.HasPrefix(e.Hash, "sha256:") {
			t.Fatalf("--json line %q: %+v, %v", l, e, err)
		}
		seqs = append(seqs, e.Seq)
	}
	if fmt.Sprint(seqs) != "[1 2 4 5]" {
		t.Errorf("--json printed seqs %v, want [1 2 4 5]", seqs)
	}

	if _, err := runCLI(t, "audit", "show", "req_zzz", "--data", dir); err == nil || !strings.Contains(err.Error(), "no audit events for request req_zzz") {
		t.Errorf("show of an unknown request = %v", err)
	}
}

// TestAuditShowTree: a request that handed tasks to agents has their work
// in sub-requests; show says so, and --tree prints their events among its
// own, in order, each with its request.
func TestAuditShowTree(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 11, 30, 8, 14, 3, 0, time.UTC)
	for _, r := range []*store.Request{
		{ID: "req_root", State: "stopped", Started: at},
		{ID: "req_planner", Parent: "req_root", Agent: "planner", State: "stopped", Started: at},
		{ID: "req_executor", Parent: "req_planner", Agent: "executor", State: "stopped", Started: at},
	} {
		if err := st.PutRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range []*audit.Event{
		{Request: "req_root", Frame: "000000000000000a", Kind: "delegate", Name: "planner", Decision: "executing"},
		{Request: "req_planner", Frame: "000000000000000b", Parent: "000000000000000a", Kind: "delegate", Name: "executor", Decision: "executing"},
		{Request: "req_executor", Frame: "000000000000000c", Parent: "000000000000000b", Kind: "tool", Name: "search_kb", Decision: "completed"},
		{Request: "req_root", Frame: "000000000000000a", Kind: "delegate", Name: "planner", Decision: "cancelled"},
	} {
		e.Time = at.Add(time.Duration(i) * time.Millisecond)
		if _, err := log.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"audit", "show", "req_root", "--data", dir}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Errorf("show printed %d lines, want a header and the root's 2 events:\n%s", n, out.String())
	}
	if !strings.Contains(errOut.String(), "req_root has 2 sub-requests") || !strings.Contains(errOut.String(), "--tree") {
		t.Errorf("show's note = %q, want it to count the 2 sub-requests and name --tree", errOut.String())
	}

	tree, err := runCLI(t, "audit", "show", "req_root", "--tree", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reach audit show req_root --tree:\n%s", tree)
	lines := strings.Split(strings.TrimRight(tree, "\n"), "\n")
	want := [][]string{{"REQUEST", "SEQ"}, {"req_root", "planner", "executing"}, {"req_planner", "executor"},
		{"req_executor", "search_kb", "completed"}, {"req_root", "planner", "cancelled"}}
	if len(lines) != len(want) {
		t.Fatalf("--tree printed %d lines, want %d", len(lines), len(want))
	}
	for i, w := range want {
		for _, f := range w {
			if !strings.HasPrefix(lines[i], w[0]) || !strings.Contains(lines[i], f) {
				t.Errorf("line %d %q lacks %q", i, lines[i], f)
			}
		}
	}
	js, err := runCLI(t, "audit", "show", "req_root", "--tree", "--json", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(js, `"request":"req_executor"`); n != 1 {
		t.Errorf("--tree --json has %d events of req_executor, want 1:\n%s", n, js)
	}
}

// TestWriteEventsNamesInstance: a stop recorded by an instance among
// several on one store says which in the table (two were the same row).
func TestWriteEventsNamesInstance(t *testing.T) {
	var buf bytes.Buffer
	evs := []*audit.Event{{Seq: 1, Kind: "stop", Name: "cancel", Guard: "operator", Message: "runaway", Instance: "b"}}
	if err := writeEvents(&buf, evs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "operator/runaway (instance b)") {
		t.Errorf("the stop's row does not name its instance:\n%s", buf.String())
	}
}
