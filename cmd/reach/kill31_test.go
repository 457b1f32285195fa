package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestKill31FailedVerifyEnded kills a real `reach serve` (kill -9) at the
// end of a write whose verify failed after it ran: request r's write
// travel__book (an undo, a verify) is in flight when r is stopped (soft:
// the write goes on); it completes, its verify is refused (r is stopped),
// so it fails, and its end is recorded, failed, with its undo (ended#1).
// After the restart the write is undone exactly once, a retry of its key
// is answered undone, r is stopped, and the audit chain verifies. Before,
// the undo ran before the write's end, which was queued and had no undo:
// the point was never reached durable, and a kill before the undo left the
// write "executing", may have run, not undone.
func TestKill31FailedVerifyEnded(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	killFailedVerify(t, "")
}

// TestKill31FailedVerifyEndedOnPostgres is TestKill31FailedVerifyEnded
// over PostgreSQL (one instance restarted under its name, instance_ttl
// 5s): the killed life's work is recovered once its heartbeat is older
// than the TTL.
func TestKill31FailedVerifyEndedOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	pg := pgtest.Own(t)
	url, err := pg.CreateDatabase(t.Context(), "failedverify")
	if err != nil {
		t.Fatal(err)
	}
	killFailedVerify(t, url)
}

// verifyUpstream is a travel upstream whose booking waits for release
// (and ignores its cancellation), whose check answers ok, and whose
// unbooking is counted.
type verifyUpstream struct {
	entered, release chan struct{}
	mu               sync.Mutex
	booked, undone   int
}

func (u *verifyUpstream) serve(t *testing.T) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "travel", Version: "1"}, nil)
	type leg struct {
		Ref string `json:"ref"`
	}
	var once sync.Once
	mcp.AddTool(srv, &mcp.Tool{Name: "book", Description: "Book a leg."},
		func(_ context.Context, _ *mcp.CallToolRequest, a leg) (*mcp.CallToolResult, any, error) {
			u.mu.Lock()
			u.booked++
			u.mu.Unlock()
			once.Do(func() { close(u.entered) })
			<-u.release
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ref":"` + a.Ref + `"}`}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "unbook", Description: "Cancel a leg."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ leg) (*mcp.CallToolResult, any, error) {
			u.mu.Lock()
			u.undone++
			u.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `"cancelled"`}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "check", Description: "Look a leg up."},
		func(context.Context, *mcp.CallToolRequest, leg) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

func killFailedVerify(t *testing.T, url string) {
	up := &verifyUpstream{entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-up.release:
		default:
			close(up.release)
		}
	})
	cfg := writeConfig(t, storeHead(url)+`upstreams:
  - {name: travel, url: '`+up.serve(t)+`'}
tools:
  travel__book: {access: write, reentrancy: reentrant, idempotent: true, undo: {tool: travel__unbook, args: '{"ref": "{args.ref}"}'}, verify: {tool: travel__check, args: '{"ref": "{args.ref}"}', condition: 'true'}}
  travel__unbook: {access: write, reentrancy: reentrant, idempotent: true}
  travel__check: {access: read}
`)
	data, addr := t.TempDir(), freeAddr(t)
	base := "http://" + addr
	const book = `{"request_id":"r","tool_calls":[{"call_id":"w","tool":"travel__book","idempotency_key":"kw","arguments":{"ref":"w"}}]}`
	cmd, reached := startReachAt(t, cfg, addr, data, "ended#1")
	go http.Post(base+"/v1/calls", "application/json", strings.NewReader(book)) // cut off by the kill
	<-up.entered
	if out := getJSON(t, "POST", base+"/v1/requests/r/cancel", `{"mode":"soft","reason":"enough"}`); out["state"] != "stopped_soft" {
		t.Fatalf("the soft stop answered %v", out)
	}
	close(up.release)
	select {
	case <-reached:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("the gateway never reached crash point ended#1: the write's end was not recorded with its undo")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	cmd = startReach(t, cfg, addr, data)
	defer stopServe(t, cmd, os.Interrupt)
	if url != "" { // the killed life is recovered once it is instance_ttl old
		(&crashRun{store: url}).recovered(t)
	}
	if res := call(t, base, strings.Replace(book, `"request_id":"r",`, "", 1)); res.Error == nil || res.Error.Code != "undone" {
		t.Errorf("the retry of the write got %+v; want the error undone (the restart undid it)", res)
	}
	if got := getJSON(t, "GET", base+"/v1/requests/r", ""); got["state"] != "stopped_soft" {
		t.Errorf("request r after the restart: %v; want stopped_soft", got["state"])
	}
	stopServe(t, cmd, os.Interrupt)
	up.mu.Lock()
	booked, undone := up.booked, up.undone
	up.mu.Unlock()
	if booked != 1 || undone != 1 {
		t.Errorf("the write ran %d times and was undone %d times; want 1 and 1", booked, undone)
	}
	where := []string{"--data", data}
	if url != "" {
		where = []string{"--store", url}
	}
	if out, errOut, err := runCmd(t, newAudit, append([]string{"verify"}, where...)...); err != nil || !strings.Contains(out, "chain ok") {
		t.Errorf("reach audit verify: %v\n%s%s", err, out, errOut)
	}
}
