package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/loopbench"
	"github.com/agentreach/reach/internal/policy"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// auditedStore opens a store in a folder of the test's own, with an audit
// log over it.
func auditedStore(t *testing.T) (string, *sqlite.Store, *audit.Log) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.New(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dir, st, log
}

// recordLoop runs a request whose third identical lookup the loop guard
// refuses, with the audit log as the runtime's recorder.
func recordLoop(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir, st, log := auditedStore(t)
	defer st.Close()
	rt := reach.New(&reach.Options{Recorder: log})
	rt.MustRegister(reach.Tool{Name: "get_order", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"status":"SHIPPED"}`), nil
	}})
	rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{ID: "looping"})
	for i := range 3 {
		mctx, m, err := rt.BeginModel(rctx, "gpt-4o")
		if err != nil {
			t.Fatal(err)
		}
		rt.Call(mctx, &reach.Call{ID: fmt.Sprint(i), Tool: "get_order", Arguments: json.RawMessage(`{"id":"7"}`)})
		m.EndModel(reach.TokenUsage{Input: 100})
	}
	req.End()
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestAuditExportAndReplay(t *testing.T) {
	dir := recordLoop(t)
	out, err := runCLI(t, "audit", "export", "looping", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := loopbench.Decode([]byte(out))
	if err != nil {
		t.Fatalf("export is not a trace: %v\n%s", err, out)
	}
	if len(tr.Events) != 6 || tr.Events[5].Tool != "get_order" || tr.Events[5].Status != "error" || tr.Events[5].ErrorType != "loop_repeat" {
		t.Fatalf("exported events: %+v", tr.Events)
	}
	// The same guards decide the same: nothing differs.
	out, err = runCLI(t, "audit", "replay", "looping", "--data", dir)
	if err != nil || !strings.Contains(out, "0 of 6 events would be decided differently") {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	// Without the loop guard, the refused lookup would have run.
	out, err = runCLI(t, "audit", "replay", "looping", "--data", dir, "--no-loops")
	if err != nil || !strings.Contains(out, `e6 get_order {"id":"7"}: recorded refused, now allowed`) || !strings.Contains(out, "1 of 6") {
		t.Fatalf("what-if: %v\n%s", err, out)
	}
	// Under a policy that forbids the tool, the two lookups that ran would be refused.
	pol := filepath.Join(t.TempDir(), "p.cedar")
	os.WriteFile(pol, []byte(`permit(principal, action, resource);
forbid(principal, action, resource == Reach::Tool::"get_order");`), 0o644)
	out, err = runCLI(t, "audit", "replay", "looping", "--data", dir, "--policy", pol)
	if err != nil || !strings.Contains(out, "e2 get_order") || !strings.Contains(out, "e4 get_order") || !strings.Contains(out, "2 of 6") {
		t.Fatalf("policy what-if: %v\n%s", err, out)
	}
	if _, err := runCLI(t, "audit", "export", "nobody", "--data", dir); err == nil || !strings.Contains(err.Error(), "no recorded frames for request nobody") {
		t.Errorf("unknown request: %v", err)
	}
}

// TestAuditReplayHeldCall: a call that was held for approval replays as
// held under the same policy (nothing differs), is not shown as differing
// without a policy (the approval is not asked again), and shows as
// "recorded held for approval, now refused" under a policy that forbids it.
func TestAuditReplayHeldCall(t *testing.T) {
	ctx := context.Background()
	dir, st, log := auditedStore(t)
	held := filepath.Join(t.TempDir(), "held.cedar")
	os.WriteFile(held, []byte(`@approval("user") permit(principal, action, resource);`), 0o644)
	set, err := policy.Load(held)
	if err != nil {
		t.Fatal(err)
	}
	q := approval.New(nil)
	rt := reach.New(&reach.Options{Recorder: log, Authorizer: policy.New(&policy.Options{Policies: set}), Approver: q.Approver(), ApprovalKey: q.ApprovalKey})
	rt.MustRegister(reach.Tool{Name: "refund", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	}})
	rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{ID: "held", Principal: "alice"})
	if res := rt.Call(rctx, &reach.Call{ID: "c1", Tool: "refund", Arguments: json.RawMessage(`{"order":"7"}`)}); res.Status != reach.StatusPending {
		t.Fatalf("the refund = %s, want pending", res.Status)
	}
	req.End()
	log.Close()
	st.Close()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"same policy", []string{"--policy", held}, "0 of 1 events"},
		{"no policy", nil, "0 of 1 events"},
		{"forbidding policy", []string{"--policy", writePolicy(t, `forbid(principal, action, resource);`)}, "recorded held for approval, now refused"},
	} {
		out, err := runCLI(t, append([]string{"audit", "replay", "held", "--data", dir}, tc.args...)...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: replay = %v\n%s\nwant %q", tc.name, err, out, tc.want)
		}
		// Under a policy, the replay says that it judged every tool as a
		// read: a policy on resource.access would mislead without it.
		if note := "every tool was judged as a read"; strings.Contains(out, note) != (len(tc.args) > 0) {
			t.Errorf("%s: replay printed\n%s\nwant the note %q only under --policy", tc.name, out, note)
		}
	}
}

func writePolicy(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "p.cedar")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAuditExportIncludesSubAgents: the export of a request holds its
// delegated agents' frames (kept in sub-requests of their own) under the
// delegation, so a replay decides them too.
func TestAuditExportIncludesSubAgents(t *testing.T) {
	ctx := context.Background()
	dir, st, log := auditedStore(t)
	cp := durable.New(st, nil, nil)
	rt := reach.New(&reach.Options{Recorder: log, Checkpoints: cp, Requests: cp})
	rt.MustRegister(reach.Tool{Name: "search", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"hits":1}`), nil
	}})
	rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{ID: "lead"})
	sctx, sub, err := rt.Delegate(rctx, &reach.Delegation{Agent: "researcher", Task: "find it"})
	if err != nil {
		t.Fatal(err)
	}
	mctx, m, _ := rt.BeginModel(sctx, "m")
	rt.Call(mctx, &reach.Call{ID: "s1", Tool: "search", Arguments: json.RawMessage(`{"q":"x"}`)})
	m.EndModel(reach.TokenUsage{Input: 10})
	sub.End()
	req.End()
	log.Close()
	st.Close()
	out, err := runCLI(t, "audit", "export", "lead", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := loopbench.Decode([]byte(out))
	if err != nil {
		t.Fatalf("export is not a trace: %v\n%s", err, out)
	}
	var kinds []string
	for _, e := range tr.Events {
		k := e.Type
		if p := e.ParentID(); p != "" {
			k += " under " + tr.Events[tr.Index(p)].Type
		}
		kinds = append(kinds, k)
	}
	if got, want := strings.Join(kinds, ", "), "delegate, model under delegate, tool_call under model"; got != want {
		t.Errorf("exported events: %s, want %s", got, want)
	}
	if out, err := runCLI(t, "audit", "replay", "lead", "--data", dir); err != nil || !strings.Contains(out, "0 of 3 events") {
		t.Errorf("replay: %v\n%s", err, out)
	}
}

// TestAuditReplayAsRecordedPrincipal: a replay decides a request as the
// principal it was recorded for, not as nobody: the shipped read policy
// (principal.authenticated) allows what it allowed when served, and a
// policy about that principal decides about it.
func TestAuditReplayAsRecordedPrincipal(t *testing.T) {
	dir, st, log := auditedStore(t)
	rt := reach.New(&reach.Options{Recorder: log})
	rt.MustRegister(reach.Tool{Name: "get_order", Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"status":"SHIPPED"}`), nil
	}})
	rctx, req, _ := rt.Begin(context.Background(), &reach.RequestOptions{ID: "mine", Principal: "local"})
	if res := rt.Call(rctx, &reach.Call{ID: "c1", Tool: "get_order", Arguments: json.RawMessage(`{"id":"7"}`)}); res.Status != reach.StatusSuccess {
		t.Fatalf("the lookup = %s, want success", res.Status)
	}
	req.End()
	log.Close()
	st.Close()
	for _, tc := range []struct{ policy, want string }{
		{`permit (principal, action == Reach::Action::"call", resource) when { principal.authenticated && resource.access == "read" };`, "0 of 1 events"},
		{`permit (principal, action, resource) unless { principal == Reach::Principal::"local" };`, "recorded allowed, now refused"},
	} {
		out, err := runCLI(t, "audit", "replay", "mine", "--data", dir, "--policy", writePolicy(t, tc.policy))
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("under %s: replay = %v\n%s\nwant %q", tc.policy, err, out, tc.want)
		}
	}
}

// TestAuditReplayRecordedUpstream: a replay places a tool in the upstream
// recorded with its calls, the gateway's upstream: tag, as the policies did
// when it ran: here upstream travel, whose tools are named trip__… (prefix:
// trip__). Placed by its name's prefix, as the replay did before reach
// recorded the upstream, a policy scoped to upstream travel did not apply
// and the replay showed no difference.
func TestAuditReplayRecordedUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a real gateway")
	}
	fx := newSideEffects(nil)
	data := t.TempDir()
	cfg := writeConfig(t, "upstreams:\n  - {name: travel, url: '"+sideEffectsUpstream(t, fx)+"', prefix: trip__}\n")
	addr := freeAddr(t)
	cmd := startReach(t, cfg, addr, data)
	killAtEnd(t, cmd)
	if r := callHTTP(t, "http://"+addr, "trip-1", "c1", "trip__book", `{"chain":1,"step":1}`, "k1"); r["status"] != "success" {
		t.Fatalf("trip__book: %v", r)
	}
	cmd.Process.Signal(syscall.SIGTERM) // the audit log flushed on the way out
	cmd.Wait()

	forbid := writePolicy(t, `permit(principal, action, resource);
forbid(principal, action, resource in Reach::Upstream::"travel");`)
	out, err := runCLI(t, "audit", "replay", "trip-1", "--data", data, "--policy", forbid)
	if err != nil || !strings.Contains(out, "trip__book") || !strings.Contains(out, "recorded allowed, now refused") || !strings.Contains(out, "1 of 1 events") {
		t.Fatalf("replay under a policy forbidding upstream travel: %v\n%s\nwant trip__book refused now", err, out)
	}
	if strings.Contains(out, "records no upstream") {
		t.Errorf("the replay says it placed a tool by its prefix, though the log recorded its upstream:\n%s", out)
	}
	// The prefix is no upstream's name: a policy on it does not apply.
	out, err = runCLI(t, "audit", "replay", "trip-1", "--data", data, "--policy", writePolicy(t, `permit(principal, action, resource);
forbid(principal, action, resource in Reach::Upstream::"trip");`))
	if err != nil || !strings.Contains(out, "0 of 1 events") {
		t.Fatalf("replay under a policy forbidding upstream trip (a prefix, no upstream): %v\n%s", err, out)
	}
	exported, err := runCLI(t, "audit", "export", "trip-1", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := loopbench.Decode([]byte(exported)); err != nil || tr.Tools["trip__book"].Upstream != "travel" {
		t.Fatalf("the export's tools: %+v (%v); want trip__book of upstream travel", tr.Tools, err)
	}
}

// TestAuditReplayUpstreamOfOlderLog: a log written before reach recorded
// each call's upstream places a tool by its name's part before "__", and
// the replay says which tools it placed so.
func TestAuditReplayUpstreamOfOlderLog(t *testing.T) {
	dir, st, log := auditedStore(t) // no audit.Options.Upstream: events as older logs hold them
	rt := reach.New(&reach.Options{Recorder: log})
	rt.MustRegister(reach.Tool{Name: "fs__write_file", Tags: []string{policy.UpstreamTag + "files"}, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"ok":true}`), nil
	}})
	rctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "older"})
	rt.Call(rctx, &reach.Call{ID: "c1", Tool: "fs__write_file", Arguments: json.RawMessage(`{"path":"a"}`)})
	req.End()
	log.Close()
	st.Close()
	out, err := runCLI(t, "audit", "replay", "older", "--data", dir, "--policy", writePolicy(t, `permit(principal, action, resource);
forbid(principal, action, resource in Reach::Upstream::"fs");`))
	if err != nil || !strings.Contains(out, "fs__write_file") || !strings.Contains(out, "recorded allowed, now refused") {
		t.Fatalf("replay of a log without upstreams, under a policy on the prefix's upstream: %v\n%s", err, out)
	}
	if !strings.Contains(out, "records no upstream for fs__write_file") {
		t.Errorf("the replay does not say it placed fs__write_file by its prefix:\n%s", out)
	}
}

// TestAuditExportCyclicRequests: the requests a store holds may be edited
// (the audit log's chain guards the events, not the requests table): a
// request made its own parent, or its sub-request's, sent `audit export` and
// `audit replay` round the cycle for ever, reading its events again on each
// turn until memory ran out. Each request is now read once.
func TestAuditExportCyclicRequests(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, sql string }{
		{"its own parent", `UPDATE requests SET parent = id WHERE id = 'lead'`},
		{"its parent's parent", `UPDATE requests SET parent = (SELECT id FROM requests WHERE parent = 'lead') WHERE id = 'lead'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, st, log := auditedStore(t)
			cp := durable.New(st, nil, nil)
			rt := reach.New(&reach.Options{Recorder: log, Checkpoints: cp, Requests: cp})
			rt.MustRegister(reach.Tool{Name: "search", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"hits":1}`), nil
			}})
			rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{ID: "lead"})
			sctx, sub, err := rt.Delegate(rctx, &reach.Delegation{Agent: "researcher", Task: "find it"})
			if err != nil {
				t.Fatal(err)
			}
			rt.Call(sctx, &reach.Call{ID: "s1", Tool: "search", Arguments: json.RawMessage(`{"q":"x"}`)})
			sub.End()
			req.End()
			log.Close()
			st.Close()
			db, err := sqlite.OpenFile(filepath.Join(dir, sqlite.DefaultFile))
			if err != nil {
				t.Fatal(err)
			}
			if res, err := db.Exec(tc.sql); err != nil {
				t.Fatal(err)
			} else if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("the edit changed %d rows, want 1", n)
			}
			db.Close()
			done := make(chan struct{})
			var out string
			go func() {
				defer close(done)
				out, err = runCLI(t, "audit", "export", "lead", "--data", dir)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("audit export of a store whose requests form a cycle did not end")
			}
			if err != nil {
				t.Fatal(err)
			}
			tr, err := loopbench.Decode([]byte(out))
			if err != nil {
				t.Fatalf("export is not a trace: %v\n%s", err, out)
			}
			if n := len(tr.Events); n != 2 {
				t.Errorf("the export holds %d events, want 2 (the delegation and the call, each once)", n)
			}
		})
	}
}
