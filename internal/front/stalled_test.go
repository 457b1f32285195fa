package front

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// smallBuffers is a listener whose connections have small send buffers,
// so that a client that stops reading fills them after a few messages.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(1024)
	}
	return c, err
}

// TestStalledStreamDoesNotStallOthers: a client that opens its session's
// stream and never reads it does not keep the server's notifications from
// the sessions after it. Without a deadline, the SDK's write to the
// stalled stream blocked once the connection's buffers were full, and
// every later notification waited behind it, for good.
func TestStalledStreamDoesNotStallOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a connection's buffers with notifications")
	}
	defer func(d time.Duration) { streamWriteTimeout = d }(streamWriteTimeout)
	streamWriteTimeout = 300 * time.Millisecond

	rt := reach.New(nil)
	rt.MustRegister(echoTool)
	life, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	owned := link.NewOwned(life, rt, time.Minute, link.Budgets{Default: &reach.Budget{}})
	t.Cleanup(owned.EndAll)
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Tools: allTools{rt}, Levels: &Levels{}})
	s.SyncTools()
	t.Cleanup(s.Close)
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)

	// The stalled client: a session first (so that it is notified first),
	// then its stream, opened on a connection it never reads.
	stalled, err := mcp.NewClient(&mcp.Implementation{Name: "stalled", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stalled.Close() })
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.(*net.TCPConn).SetReadBuffer(1024)
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n%s: %s\r\n%s: %s\r\n\r\n",
		srv.Listener.Addr(), mcpwire.HeaderSession, stalled.ID(), mcpwire.HeaderProtocol, mcpwire.SessionProtocol)

	// Another client, listening on its own stream for the tool list's changes.
	changed := make(chan struct{}, 1)
	other, err := mcp.NewClient(&mcp.Implementation{Name: "other", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}}).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })

	// Changes, each notified (the SDK gathers those of 10 ms into one),
	// until the stalled stream's buffers are full many times over.
	tool := &mcp.Tool{Name: "flip", InputSchema: map[string]any{"type": "object"}}
	for i := range 300 {
		if i%2 == 0 {
			s.mcp.AddTool(tool, unreachable)
		} else {
			s.mcp.RemoveTools(tool.Name)
		}
		time.Sleep(12 * time.Millisecond)
	}
	// Then the other client hears of one more change.
	for len(changed) > 0 {
		<-changed
	}
	s.mcp.AddTool(&mcp.Tool{Name: "last", InputSchema: map[string]any{"type": "object"}}, unreachable)
	select {
	case <-changed:
	case <-time.After(time.Minute): // a hang's guard, not a measure
		t.Fatal("the other session was never told of the change: the stalled stream holds up the notifications")
	}
}
