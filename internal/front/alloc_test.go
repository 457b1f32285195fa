package front

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFastCallAllocations: a tools/call on the fast lane, from the POST's
// body to its answer, with the runtime's guards and a tool that answers at
// once, allocates no more than it did when measured (the runtime's own
// part included: BenchmarkCall holds that apart):
//   - the call's context is the one link makes under its request,
//     cancelled by the client's notifications/cancelled, not one more of
//     the fast lane's own (5 allocations a call);
//   - the MCP result is rendered into a pooled answer (its text block and
//     _meta map included), written out before the call returns;
//   - the session is found by its id without the id going to the heap;
//   - the request id's _meta value is the session's, made once;
//   - the call's context hooks no context that ends with the request's
//     (the gateway's, or one that never ends: 4 allocations), and its
//     tool's attempt makes no timer that nothing waits for (7);
//   - the answer's text is a view of the result's data, not a copy (1);
//   - the _meta's frame id is the pooled answer's, by a pointer, not a
//     string made and boxed for it (2).
func TestFastCallAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	// Its events go to a Keeper beside a Recorder that keeps nothing, as
	// served (the audit log beside the metrics).
	kept := &keepsAll{}
	rt := reach.New(&reach.Options{Recorder: reach.Recorders(recordsNothing{}, kept)})
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }})
	life, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	owned := link.NewOwned(life, rt, time.Minute, link.Budgets{Default: &reach.Budget{}}) // unlimited, as served
	t.Cleanup(owned.EndAll)
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Tools: allTools{rt}, Levels: &Levels{}})
	s.SyncTools()
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "allocs", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	h := http.Header{}
	h.Set(mcpwire.HeaderSession, cs.ID())
	h.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
	var out bytes.Buffer
	i := 0
	call := func() {
		i++
		body := []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"q` + strconv.Itoa(i) + `"}}}`)
		out.Reset()
		if _, ok := s.AnswerPost(life, h, body, &out); !ok || !bytes.Contains(out.Bytes(), []byte(`"result"`)) ||
			bytes.Contains(out.Bytes(), []byte(`"isError":true`)) {
			t.Fatalf("the fast lane did not answer the call: %v %s", ok, out.Bytes())
		}
	}
	for range 20 {
		call()
	}
	// 20 when measured, the test's own body and the call's event included
	// (22 with the frame id a string boxed in the _meta map; 26 with a
	// closure for each event's receipt and the fan's count of its
	// Keepers). With no Recorder, 21 (22 with the call's hold on its
	// request and its done closures of their own; 23 with the text a copy
	// of the data; 34 with the call's context hooked on the POST's and the
	// attempt's timeout a timer; 48 before the loop guard's observation in
	// its own buffer, its step in the call and the request id's _meta value
	// kept by the session).
	if n := testing.AllocsPerRun(200, call); n > 20 {
		t.Errorf("a fast call allocates %v times, want at most 20", n)
	}
	if kept.told.Load() < 220 {
		t.Errorf("the Keeper was told of %d events' keeping, want one a call at least", kept.told.Load())
	}
}

// keepsAll is a Keeper that keeps every event at once.
type keepsAll struct{ told atomic.Int64 }

func (k *keepsAll) Record(context.Context, *reach.Event) {}

func (k *keepsAll) Keep(_ context.Context, _ *reach.Event, r reach.Receipt) {
	k.told.Add(1)
	r.Kept(true)
}

// recordsNothing is a Recorder, no Keeper, that keeps nothing.
type recordsNothing struct{}

func (recordsNothing) Record(context.Context, *reach.Event) {}

// TestFastCallSessionlessAllocations: a sessionless (2026-07-28) call of a
// read on the fast lane, while another of its client's is in flight (a
// request begun and ended for it, as a crowd of one app's clients gets),
// from its body to its answer, allocates no more than it did when
// measured, the test's own body included:
//   - its _meta is read from its JSON, not decoded into a map (28
//     allocations: the go-sdk client's clientInfo and capabilities);
//   - a _meta without baggage is read without a slice of its members
//     (4: the _meta is read twice);
//   - the call's hold on its request of its own, its client's count and
//     its context's end are one value, not closures with a sync.Once each
//     (4);
//   - its request's loop detector makes the maps of its tables when it
//     puts in them, not those it never uses (3);
//   - the _meta's frame id is the pooled answer's, by a pointer (2).
func TestFastCallSessionlessAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	sb := newStatelessBench(t, false)
	var out bytes.Buffer
	call := func() { sb.call(t, &out) }
	for range 20 {
		call()
	}
	// 57 when measured (59 with the frame id a string boxed in the
	// _meta map, 98 before).
	if n := testing.AllocsPerRun(200, call); n > 57 {
		t.Errorf("a sessionless call allocates %v times, want at most 57", n)
	}
}
