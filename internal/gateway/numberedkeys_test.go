package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/ids"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestNumberedWriteKeysInCallOrder: MCP clients in three sessions call a
// write tool in turn, naming no call id. The gateway numbers the calls
// (ids.Numbered), and the store's idempotency records, read back from the
// data folder, have keys that lead with the call id: they sort as text in
// the order the calls were claimed, whichever session made them, so the
// keys' unique index takes each at its end. Spelled "ROOT/CALL", or with
// the decimal count numbered before, they sort by session or by digit
// count, and the test fails.
func TestNumberedWriteKeysInCallOrder(t *testing.T) {
	dir := t.TempDir()
	g := newTestGateway(t, &config.Config{Data: dir})
	g.rt.MustRegister(reach.Tool{Name: "note", Access: reach.Write,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }})
	var sessions []*mcp.ClientSession
	for range 3 {
		sessions = append(sessions, connectMCP(t, g, nil))
	}
	const calls = 36
	for i := range calls {
		res, err := sessions[i%len(sessions)].CallTool(t.Context(), &mcp.CallToolParams{Name: "note", Arguments: map[string]any{"n": i}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), dir, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reqs, err := st.ListRequests(t.Context(), store.RequestFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var frames []*store.Frame
	requests := map[string]bool{}
	for _, r := range reqs {
		fs, err := st.RequestFrames(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.Name == "note" {
				frames = append(frames, f)
				requests[r.ID] = true
			}
		}
	}
	order := func(f *store.Frame) int { // the calls' order: the n each was sent
		var a struct{ N int }
		if err := json.Unmarshal(f.Args, &a); err != nil {
			t.Fatalf("call %s: arguments %s: %v", f.CallID, f.Args, err)
		}
		return a.N
	}
	slices.SortFunc(frames, func(a, b *store.Frame) int { return order(a) - order(b) })
	var keys []string
	for _, f := range frames {
		if !ids.Numbered(f.CallID) || !strings.Contains(f.IdemKey, "\x00note:"+f.CallID+"/"+f.Request) {
			t.Fatalf("record key %q of call %q: want a numbered call id, leading the key after the tool", f.IdemKey, f.CallID)
		}
		keys = append(keys, f.IdemKey)
	}
	if len(keys) != calls || len(requests) != len(sessions) {
		t.Fatalf("%d records in %d requests, want %d in %d (a request a session)", len(keys), len(requests), calls, len(sessions))
	}
	if !slices.IsSorted(keys) {
		t.Fatalf("the keys, in the order the calls were made, do not sort as text: %q", keys)
	}
}
