package front

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoTool answers with its arguments.
var echoTool = reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant,
	Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }}

// sessionRequest makes a call on the session of h, in no request it
// names, and returns the request it ran in: the session's.
func sessionRequest(t *testing.T, s *Server, rt *reach.Runtime, h http.Header) *reach.Request {
	t.Helper()
	var out bytes.Buffer
	if _, ok := s.AnswerPost(context.Background(), h, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`), &out); !ok {
		t.Fatal("the call was not answered")
	}
	var a struct {
		Result struct {
			Meta map[string]any `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out.Bytes(), &a); err != nil {
		t.Fatalf("%v: %s", err, out.Bytes())
	}
	id, _ := a.Result.Meta[link.MetaRequest].(string)
	r, ok := rt.Lookup(id)
	if !ok {
		t.Fatalf("no request %q: %s", id, out.Bytes())
	}
	return r
}

// blockedCall begins a fast call of the block tool on the session of h,
// in the session's request, and returns once the tool runs; the channel
// gets the answer's content type when the call returns.
func blockedCall(t *testing.T, s *Server, h http.Header, started <-chan string) <-chan string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		var out bytes.Buffer
		ct, _ := s.AnswerPost(context.Background(), h, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block","arguments":{}}}`), &out)
		done <- ct
	}()
	<-started
	return done
}

// kept reports whether the server keeps state for the session id.
func kept(s *Server, id string) bool {
	_, byID := s.byID.Load(id)
	found := false
	s.sessions.Range(func(k, _ any) bool {
		if ss, ok := k.(*mcp.ServerSession); ok && ss.ID() == id {
			found = true
		}
		return true
	})
	return byID || found
}

// A client's DELETE of its session ends the session's request at once
// (its running call with it), and the server forgets the session, with no
// sweep.
func TestSessionDeleteEndsAtOnce(t *testing.T) {
	started, ended := make(chan string, 1), make(chan error, 1)
	s, srv, rt, _ := review6Server(t, echoTool, blockTool(started, ended))
	_, h := review6Session(t, srv, "deletes")
	r := sessionRequest(t, s, rt, h)
	done := blockedCall(t, s, h, started)
	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	req.Header = h.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: status %d, want 204", resp.StatusCode)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Error("the call ended with no cause")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session's call still runs after its DELETE")
	}
	<-done
	if st := r.State(); st != reach.RequestCompleted {
		t.Errorf("the session's request is %s after its DELETE, want completed", st)
	}
	if kept(s, h.Get(mcpwire.HeaderSession)) {
		t.Error("the server keeps the deleted session")
	}
}

// A DELETE the SDK refuses (a session it does not know) ends nothing.
func TestSessionDeleteRefusedEndsNothing(t *testing.T) {
	started, ended := make(chan string, 1), make(chan error, 1)
	s, srv, rt, _ := review6Server(t, echoTool, blockTool(started, ended))
	_, h := review6Session(t, srv, "stays")
	r := sessionRequest(t, s, rt, h)
	done := blockedCall(t, s, h, started)
	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	req.Header = h.Clone()
	req.Header.Set(mcpwire.HeaderSession, "no-such-session")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE of an unknown session: status %d, want 404", resp.StatusCode)
	}
	if st := r.State(); st != reach.RequestRunning {
		t.Errorf("another session's request is %s after a refused DELETE, want running", st)
	}
	r.Stop(reach.Cancel, "test", "done")
	<-ended
	<-done
}

// A session the SDK closed without a DELETE (its idle timeout, a client
// gone) ends its request, a call still running in it included, by the
// next sweep, and the server forgets it then; an open session's request
// runs on through sweeps.
func TestSessionClosedEndsAtSweep(t *testing.T) {
	started, ended := make(chan string, 1), make(chan error, 1)
	s, srv, rt, _ := review6Server(t, echoTool, blockTool(started, ended))
	_, h := review6Session(t, srv, "closed")
	_, hOpen := review6Session(t, srv, "open")
	r := sessionRequest(t, s, rt, h)
	open := sessionRequest(t, s, rt, hOpen)
	done := blockedCall(t, s, h, started)

	s.sessionByID(h.Get(mcpwire.HeaderSession)).Close() // as the SDK's idle timeout does
	s.SweepClients()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the closed session's call still runs after a sweep")
	}
	<-done
	if st := r.State(); st != reach.RequestCompleted {
		t.Errorf("the closed session's request is %s after a sweep, want completed", st)
	}
	if kept(s, h.Get(mcpwire.HeaderSession)) {
		t.Error("the server keeps the closed session after a sweep")
	}
	if st := open.State(); st != reach.RequestRunning {
		t.Errorf("the open session's request is %s after a sweep, want running", st)
	}
	if !kept(s, hOpen.Get(mcpwire.HeaderSession)) {
		t.Error("the sweep forgot the open session")
	}
}

// Close ends the requests of the sessions it closes.
func TestCloseEndsSessionRequests(t *testing.T) {
	started, ended := make(chan string, 1), make(chan error, 1)
	s, srv, rt, _ := review6Server(t, echoTool, blockTool(started, ended))
	_, h := review6Session(t, srv, "closes")
	r := sessionRequest(t, s, rt, h)
	done := blockedCall(t, s, h, started)
	s.Close()
	<-ended
	<-done
	if st := r.State(); st != reach.RequestCompleted {
		t.Errorf("the session's request is %s after Close, want completed", st)
	}
	if kept(s, h.Get(mcpwire.HeaderSession)) {
		t.Error("the server keeps a session after Close")
	}
}

// No goroutine waits for a session's end: a session costs none of the
// gateway's own (the SDK's and net/http's are theirs).
func TestSessionsHaveNoGoroutine(t *testing.T) {
	s, srv, rt, _ := review6Server(t, echoTool)
	for i := range 8 {
		_, h := review6Session(t, srv, fmt.Sprint("s", i))
		sessionRequest(t, s, rt, h)
	}
	// A goroutine the front started says so in its "created by" line; a
	// handler still finishing an answer the client already read runs
	// front's code too, on net/http's goroutine.
	buf := make([]byte, 1<<20)
	for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "created by github.com/agentreach/reach/internal/front.") {
			t.Errorf("a goroutine of the front's own with 8 sessions open and idle:\n%s", g)
		}
	}
}
