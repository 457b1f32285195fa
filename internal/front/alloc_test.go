package front

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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
	// 18 when measured, the test's own body and the call's event included
	// (19 with the tool's name a copy of the body's, not the registered
	// string; 20 with link's done a method value of the call's hold;
	// 22 with the frame id a string boxed in the _meta map; 26 with a
	// closure for each event's receipt and the fan's count of its
	// Keepers). With no Recorder, 21 (22 with the call's hold on its
	// request and its done closures of their own; 23 with the text a copy
	// of the data; 34 with the call's context hooked on the POST's and the
	// attempt's timeout a timer; 48 before the loop guard's observation in
	// its own buffer, its step in the call and the request id's _meta value
	// kept by the session).
	if n := testing.AllocsPerRun(200, call); n > 18 {
		t.Errorf("a fast call allocates %v times, want at most 18", n)
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
	// 55 when measured (56 with the tool's name a copy of the body's, not
	// the registered string; 57 with link's done a method value of the
	// call's hold; 59 with the frame id a string boxed in the
	// _meta map, 98 before).
	if n := testing.AllocsPerRun(200, call); n > 55 {
		t.Errorf("a sessionless call allocates %v times, want at most 55", n)
	}
}

// peekedHeaders are a request's headers as the HTTP server gives them:
// the session id a view of a buffer that the next request overwrites.
// Only the session's and the protocol's headers are sent.
type peekedHeaders struct {
	session  []byte
	protocol string
}

func (p *peekedHeaders) Get(k string) string {
	switch {
	case strings.EqualFold(k, mcpwire.HeaderSession):
		return string(p.session) // a copy, as the HTTP server's Get makes
	case strings.EqualFold(k, mcpwire.HeaderProtocol):
		return p.protocol
	}
	return ""
}

func (p *peekedHeaders) Values(k string) []string {
	if v := p.Get(k); v != "" {
		return []string{v}
	}
	return nil
}

// Prefixed: no header of a prefix is sent (PrefixedHeaders).
func (p *peekedHeaders) Prefixed(string) bool { return false }

func (p *peekedHeaders) Peek(k string) []byte {
	if strings.EqualFold(k, mcpwire.HeaderSession) {
		return p.session
	}
	return []byte(p.Get(k))
}

// copiedHeaders are peekedHeaders that can only give a copy of a value.
type copiedHeaders struct{ p *peekedHeaders }

func (c copiedHeaders) Get(k string) string         { return c.p.Get(k) }
func (c copiedHeaders) Values(k string) []string    { return c.p.Values(k) }
func (c copiedHeaders) Prefixed(prefix string) bool { return c.p.Prefixed(prefix) }

// TestFastCallPeekedSession: a fast call on headers that give the session
// id as a view of the request's buffer (HeaderPeeker, as the HTTP server's
// do) finds its session without a copy of the id, and what the fast lane
// keeps of the id is a copy: with the buffer overwritten after every call
// (as the next request overwrites it), each call still finds its session,
// and the session is still known by its id. The id is read without an
// allocation, where the HTTP server's Get makes one.
func TestFastCallPeekedSession(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }})
	life, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	owned := link.NewOwned(life, rt, time.Minute, link.Budgets{Default: &reach.Budget{}})
	t.Cleanup(owned.EndAll)
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Tools: allTools{rt}, Levels: &Levels{}})
	s.SyncTools()
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "peek", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	peeked := &peekedHeaders{session: make([]byte, len(cs.ID())), protocol: mcpwire.SessionProtocol}
	var out bytes.Buffer
	i := 0
	call := func(h link.Headers) {
		i++
		copy(peeked.session, cs.ID())
		body := []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"q` + strconv.Itoa(i) + `"}}}`)
		out.Reset()
		if _, ok := s.AnswerPost(life, h, body, &out); !ok || !bytes.Contains(out.Bytes(), []byte(`"result"`)) ||
			bytes.Contains(out.Bytes(), []byte(`"isError":true`)) {
			t.Fatalf("call %d: the fast lane did not answer: %v %s", i, ok, out.Bytes())
		}
		for j := range peeked.session {
			peeked.session[j] = 'x' // the next request's bytes
		}
	}
	// Forgotten by its id (as after a take-over), the session is found
	// among the SDK's by the first call, which keeps its id.
	s.byID.Delete(cs.ID())
	for range 5 {
		call(peeked)
	}
	if _, ok := s.byID.Load(cs.ID()); !ok {
		t.Fatalf("the session is not known by its id after calls with the id a view: its key was the overwritten view")
	}
	if _, ok := s.byID.Load(strings.Repeat("x", len(cs.ID()))); ok {
		t.Fatalf("the session is known by the overwritten bytes of the header")
	}
	if raceEnabled {
		return // the race detector allocates on its own
	}
	// The id is read without a copy (the HTTP server's Get makes one: one
	// allocation a call).
	copy(peeked.session, cs.ID())
	var sid string
	if n := testing.AllocsPerRun(100, func() { sid = sessionHeader(peeked) }); n > 0 || sid != cs.ID() {
		t.Errorf("the session id read from peeked headers: %q with %v allocations, want %q with none", sid, n, cs.ID())
	}
	if n := testing.AllocsPerRun(100, func() { sid = sessionHeader(copiedHeaders{peeked}) }); n != 1 || sid != cs.ID() {
		t.Errorf("the session id read from headers that copy: %q with %v allocations, want %q with one", sid, n, cs.ID())
	}
}
