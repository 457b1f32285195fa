package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/loopbench"
)

// TestAuditExportOfRemovedRequestIncludesSubAgents: once the retention
// sweep removed a request and its delegations' sub-requests from the
// store, its export (and so its replay) still holds the delegated agents'
// frames, found by their events, which name the root request: the audit
// log keeps them, as docs/STATE.md "Retention" says.
func TestAuditExportOfRemovedRequestIncludesSubAgents(t *testing.T) {
	ctx := context.Background()
	dir, st, log := auditedStore(t)
	cp := durable.New(st, nil, nil)
	rt := reach.New(&reach.Options{Recorder: log, Checkpoints: cp, Requests: cp})
	rt.MustRegister(reach.Tool{Name: "search", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"hits":1}`), nil
	}})
	// Another request's events between the root's, which the export
	// leaves out.
	octx, other, _ := rt.Begin(ctx, &reach.RequestOptions{ID: "other"})
	rctx, req, _ := rt.Begin(ctx, &reach.RequestOptions{ID: "lead"})
	sctx, sub, err := rt.Delegate(rctx, &reach.Delegation{Agent: "researcher", Task: "find it"})
	if err != nil {
		t.Fatal(err)
	}
	rt.Call(octx, &reach.Call{ID: "o1", Tool: "search", Arguments: json.RawMessage(`{"q":"other"}`)})
	mctx, m, _ := rt.BeginModel(sctx, "m")
	rt.Call(mctx, &reach.Call{ID: "s1", Tool: "search", Arguments: json.RawMessage(`{"q":"x"}`)})
	m.EndModel(reach.TokenUsage{Input: 10})
	sub.End()
	req.End()
	other.End()
	log.Close()
	for {
		got, err := st.SweepFinished(ctx, time.Now().Add(time.Second), 64)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rows() == 0 {
			break
		}
	}
	if _, err := st.GetRequest(ctx, "lead"); err == nil {
		t.Fatal("the sweep left the request")
	}
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
		t.Errorf("exported events of the removed request: %s, want %s", got, want)
	}
}
