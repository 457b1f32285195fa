package audit_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
)

func ExampleLog() {
	ctx := context.Background()
	st := store.NewMemory() // sqlite.Open(ctx, ".reach", nil) for the durable log
	log, _ := audit.New(ctx, st, nil)

	// The log stores what it is given: give it masked (the runtime does).
	red, _ := redact.New(&redact.Options{Secrets: []string{"sk-live-0123456789"}})
	seq, _ := log.Append(ctx, &audit.Event{Request: "req_1", Kind: "tool", Name: "charge",
		Decision: "completed", Args: red.Redact([]byte(`{"amount":12,"api_key":"sk-live-0123456789"}`))})
	log.Close()

	evs, _ := audit.Show(ctx, st, "req_1")
	fmt.Println(seq, evs[0].Name, string(evs[0].Args))
	rep, err := audit.Verify(ctx, st)
	fmt.Println(rep.Events, err)
	// Output:
	// 1 charge {"amount":12,"api_key":"[REDACTED]"}
	// 1 <nil>
}

func ExampleVerify() {
	ctx := context.Background()
	st := store.NewMemory()
	log, _ := audit.New(ctx, st, nil)
	for i := range 3 {
		log.Append(ctx, &audit.Event{Request: "r", Kind: "tool", Name: fmt.Sprint("step", i)})
	}
	log.Close()

	// Someone edits the second event's stored JSON.
	recs, _ := st.ScanAudit(ctx, 0, 0)
	recs[1].Data = []byte(`{"kind":"tool","name":"forged"}`)
	tampered := store.NewMemory()
	tampered.AppendAudit(ctx, recs, nil)

	_, err := audit.Verify(ctx, tampered)
	if ce, ok := errors.AsType[*audit.ChainError](err); ok {
		fmt.Println(ce.Seq, ce.Problem)
	}
	// Output:
	// 2 edited
}
