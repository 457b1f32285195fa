package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A write that `reach serve` was killed (kill -9) while it ran, or whose
// client's connection dropped while it ran, is sent again by a client that
// retries after a transport error (Mastra's MCP client does, once): a new
// session, a new call id, no idempotency key. Before, the retry ran the
// write a second time (upstream add_item ran twice). Now the retry is
// answered with the error interrupted, naming the call that was cut off,
// and the call after it runs.
func TestCutOff20RetriedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts reach serve")
	}
	var mu sync.Mutex
	runs := map[string]int{} // item -> runs that reached the upstream
	began := make(chan string, 8)
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add_item", Description: "Add an item to the cart."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			Item string `json:"item"`
		}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			runs[in.Item]++ // the write takes effect; its answer is slow
			n := runs[in.Item]
			mu.Unlock()
			if n == 1 && strings.HasPrefix(in.Item, "slow") {
				began <- in.Item
				select { // a write that does not stop for a cancel
				case <-time.After(2 * time.Second):
				case <-t.Context().Done():
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + in.Item}}}, nil, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	ran := func(item string) int {
		mu.Lock()
		defer mu.Unlock()
		return runs[item]
	}
	cfg := writeConfig(t, "upstreams:\n  - {name: shop, url: '"+up.URL+"'}\ntools:\n  shop__add_item: {access: write}\n")
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	cmd := startReach(t, cfg, addr, data)

	// callMCP calls add_item in an MCP session of its own, as a client
	// that reconnected does, and gives the result's text and isError.
	callMCP := func(item string) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop__add_item", Arguments: map[string]any{"item": item}})
		if err != nil {
			t.Fatalf("add_item %s: %v", item, err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return text.String(), res.IsError
	}
	// callAPI calls add_item in a request of its own (POST /v1/calls with
	// no request id), as an HTTP client's retry does.
	callAPI := func(item string) (string, bool) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"tool_calls": []any{map[string]any{"call_id": "c1", "tool": "shop__add_item", "arguments": map[string]any{"item": item}}}})
		_, out := postJSON(t, base+"/v1/calls", string(body))
		res, _ := out["results"].([]any)
		if len(res) != 1 {
			t.Fatalf("add_item %s: %v", item, out)
		}
		r, _ := res[0].(map[string]any)
		if r["status"] == "success" {
			return fmt.Sprint("added ", item), false
		}
		return fmt.Sprint(r["error"]), true
	}
	retried := func(item, how string, call func(string) (string, bool)) {
		t.Helper()
		text, isErr := call(item)
		if !isErr || !strings.Contains(text, "was cut off before its answer was delivered") || !strings.Contains(text, how) ||
			!strings.Contains(text, "call it again") {
			t.Fatalf("the retry of %s: isError %v %q; want the refusal that says it was cut off (%s)", item, isErr, text, how)
		}
		if n := ran(item); n != 1 {
			t.Fatalf("%s ran %d times after its retry, want 1", item, n)
		}
		if text, isErr := call(item); isErr || text != "added "+item {
			t.Fatalf("%s called again: isError %v %q; want it run", item, isErr, text)
		}
		if n := ran(item); n != 2 {
			t.Fatalf("%s ran %d times after it was called again, want 2", item, n)
		}
	}

	// Two identical writes, both answered: both run.
	for range 2 {
		if text, isErr := callMCP("apple"); isErr {
			t.Fatalf("apple: %q", text)
		}
	}
	if n := ran("apple"); n != 2 {
		t.Fatalf("apple ran %d times, want 2", n)
	}

	// The connection drops while the write runs.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/calls",
			strings.NewReader(`{"request_id":"drop","tool_calls":[{"call_id":"c1","tool":"shop__add_item","arguments":{"item":"slow pear"}}]}`))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-began
	cancel()
	for i := 0; !strings.Contains(fmt.Sprint(getJSONTB(t, base+"/v1/requests/drop")["frames"]), "status:cancelled"); i++ {
		if i == 3000 {
			t.Fatal("the call whose client hung up was never ended")
		}
		time.Sleep(10 * time.Millisecond) // until the gateway saw the hang-up and ended the call
	}
	retried("slow pear", "its caller hung up", callAPI)

	// reach serve is killed while the write runs, and started again.
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil); err == nil {
			cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop__add_item", Arguments: map[string]any{"item": "slow plum"}})
			cs.Close()
		}
	}()
	<-began
	cmd.Process.Kill()
	cmd.Wait()
	<-done
	startReach(t, cfg, addr, data)
	retried("slow plum", "the gateway stopped while it ran", callMCP)
}
