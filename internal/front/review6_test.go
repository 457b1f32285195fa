package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// review6Server is a front with the fast lane and the tools given, served
// over HTTP, as TestFastCallAllocations makes it.
func review6Server(t *testing.T, tools ...reach.Tool) (*Server, *httptest.Server, *reach.Runtime, *link.Owned) {
	t.Helper()
	return review6ServerOpts(t, nil, tools...)
}

// review6ServerOpts is review6Server with a runtime made with opts.
func review6ServerOpts(t *testing.T, opts *reach.Options, tools ...reach.Tool) (*Server, *httptest.Server, *reach.Runtime, *link.Owned) {
	t.Helper()
	rt := reach.New(opts)
	for _, tl := range tools {
		rt.MustRegister(tl)
	}
	life, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	owned := link.NewOwned(life, rt, time.Minute, link.Budgets{Default: &reach.Budget{}})
	t.Cleanup(owned.EndAll)
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Tools: allTools{rt}, Levels: &Levels{}})
	s.SyncTools()
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv, rt, owned
}

// review6Session connects a client session on the fast lane's protocol
// and returns it with the headers of a POST on it.
func review6Session(t *testing.T, srv *httptest.Server, name string) (*mcp.ClientSession, http.Header) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h := http.Header{}
	h.Set(mcpwire.HeaderSession, cs.ID())
	h.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	return cs, h
}

// postHTTP sends body through the front's handler (the fast lane as
// served over net/http) and returns the status and the answer.
func postHTTP(s *Server, h http.Header, body string) (int, []byte) {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header = h.Clone()
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return w.Code, w.Body.Bytes()
}

var payloadRE = regexp.MustCompile(`pay-[0-9]+-[0-9]+-[0-9]+`)

// fastAnswer is a tools/call's JSON-RPC answer.
type fastAnswer struct {
	ID     int `json:"id"`
	Result struct {
		Content []struct{ Text string }
		IsError bool           `json:"isError"`
		Meta    map[string]any `json:"_meta"`
	}
}

// ownAnswer reads got, the answer of a call with payload pay: it must
// hold that payload, in its one content block, and no other.
func ownAnswer(t *testing.T, pay string, got []byte) (fastAnswer, bool) {
	var ans fastAnswer
	if err := json.Unmarshal(got, &ans); err != nil {
		t.Errorf("%s: %v: %s", pay, err, got)
		return ans, false
	}
	for _, p := range payloadRE.FindAllString(string(got), -1) {
		if p != pay {
			t.Errorf("%s: the answer holds %s: %s", pay, p, got)
		}
	}
	if len(ans.Result.Content) != 1 || !strings.Contains(ans.Result.Content[0].Text, pay) {
		t.Errorf("%s: content is not its own: %s", pay, got)
	}
	return ans, true
}

// TestReview6AnswersAreTheirOwn: many fast calls at once, on several
// sessions, each in a request of its own and with a payload of its own,
// half through AnswerPost and half through the net/http handler, half a
// success and half a tool's error: every answer holds its own payload and
// no other, its own request id and status in _meta, and a frame no other
// answer has. (The answers are rendered into pooled results, text blocks
// and _meta maps: one read after it went back to the pool, or shared by
// two calls, shows here under -race.)
func TestReview6AnswersAreTheirOwn(t *testing.T) {
	tools := []reach.Tool{
		{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant,
			Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
				runtime.Gosched()
				return args, nil
			}},
		{Name: "fail", Access: reach.Read, Reentrancy: reach.Reentrant,
			Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
				runtime.Gosched()
				var a struct{ Text string }
				json.Unmarshal(args, &a)
				return nil, errors.New("no luck for " + a.Text)
			}},
	}
	// Each request's "fail" calls fail alike, one after the other (12
	// of them): the loop guard's same_error would refuse the fourth
	// (docs/LOOPS.md), and this test is about whose answer is whose, so
	// its streak is let run.
	s, srv, _, _ := review6ServerOpts(t, &reach.Options{Loops: &reach.LoopOptions{ErrorStreak: 100}}, tools...)
	const sessions, workers, calls = 3, 6, 25
	var hs [sessions]http.Header
	for i := range hs {
		_, hs[i] = review6Session(t, srv, "review6-"+strconv.Itoa(i))
	}
	var (
		mu     sync.Mutex
		frames = map[string]string{}
		wg     sync.WaitGroup
	)
	for si := range sessions {
		for w := range workers {
			wg.Go(func() {
				req := fmt.Sprintf("rq-%d-%d", si, w)
				for i := range calls {
					pay := fmt.Sprintf("pay-%d-%d-%d", si, w, i)
					tool := "echo"
					if i%2 == 1 {
						tool = "fail"
					}
					body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":%q},"_meta":{%q:%q}}}`,
						w*1000+i, tool, pay, link.MetaRequest, req)
					var got []byte
					if i%4 < 2 {
						var out bytes.Buffer
						ct, ok := s.AnswerPost(context.Background(), hs[si], []byte(body), &out)
						if !ok || ct != ContentTypeJSON {
							t.Errorf("%s: AnswerPost did not answer (%v, %q)", pay, ok, ct)
							return
						}
						got = out.Bytes()
					} else {
						code, b := postHTTP(s, hs[si], body)
						if code != http.StatusOK {
							t.Errorf("%s: status %d: %s", pay, code, b)
							return
						}
						got = b
					}
					ans, ok := ownAnswer(t, pay, got)
					if !ok {
						return
					}
					if ans.ID != w*1000+i {
						t.Errorf("%s: id %d", pay, ans.ID)
					}
					m := ans.Result.Meta
					wantStatus := "success"
					if tool == "fail" {
						wantStatus = "error"
					}
					if m[link.MetaRequest] != req || m[link.MetaStatus] != wantStatus || ans.Result.IsError != (tool == "fail") {
						t.Errorf("%s: _meta %v, isError %v: want request %s, status %s", pay, m, ans.Result.IsError, req, wantStatus)
					}
					if _, ok := m[link.MetaError]; ok != (tool == "fail") {
						t.Errorf("%s: _meta %v: an error's key on a %s", pay, m, tool)
					}
					f, _ := m[link.MetaFrame].(string)
					mu.Lock()
					if other, dup := frames[f]; dup || f == "" {
						t.Errorf("%s: frame %q, also %s's", pay, f, other)
					}
					frames[f] = pay
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(frames) != sessions*workers*calls {
		t.Errorf("%d frames, want %d", len(frames), sessions*workers*calls)
	}
}

// blockTool is a tool that waits for its context to end and reports the
// cause on ended. started gets a value when it begins.
func blockTool(started chan<- string, ended chan<- error) reach.Tool {
	return reach.Tool{Name: "block", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			started <- string(args)
			<-ctx.Done()
			ended <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}}
}

// TestReview6FastCallEnds: a fast call's context is link's under its
// request; the client's notifications/cancelled (by its JSON-RPC id, on its
// session) ends it and its answer is an empty stream; a stop of its
// request (cancel) ends it with the stop as cause; the client's closing of
// its session ends it; a cancellation of another id, or on another session,
// does not.
func TestReview6FastCallEnds(t *testing.T) {
	started, ended := make(chan string, 4), make(chan error, 4)
	s, srv, rt, _ := review6Server(t, blockTool(started, ended))
	cs, h := review6Session(t, srv, "ends")
	_, h2 := review6Session(t, srv, "other")
	call := func(id int, meta string) <-chan string {
		done := make(chan string, 1)
		go func() {
			var out bytes.Buffer
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"block","arguments":{"n":%d}%s}}`, id, id, meta)
			ct, ok := s.AnswerPost(context.Background(), h, []byte(body), &out)
			if !ok {
				ct = "not answered"
			}
			done <- ct + " " + out.String()
		}()
		return done
	}
	cancelNote := func(h http.Header, id int) int {
		code, _ := postHTTP(s, h, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"the user left"}}`, id))
		return code
	}

	// The client cancels.
	done := call(7, "")
	<-started
	if code := cancelNote(h2, 7); code == http.StatusAccepted {
		t.Errorf("a cancellation on another session was taken for the call")
	}
	cancelNote(h, 8)
	select {
	case err := <-ended:
		t.Fatalf("a cancellation of another id ended the call: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if code := cancelNote(h, 7); code != http.StatusAccepted {
		t.Errorf("notifications/cancelled: status %d, want 202", code)
	}
	if err := <-ended; !errors.Is(err, errClientCancelled) || !strings.Contains(err.Error(), "the user left") {
		t.Errorf("the call ended with %v, want the client's cancellation and its reason", err)
	}
	if got := <-done; got != ContentTypeSSE+" " {
		t.Errorf("a cancelled call's answer: %q, want an empty stream", got)
	}

	// Its request is stopped.
	done = call(9, `,"_meta":{"reach/request":"rq-stop"}`)
	<-started
	r, ok := rt.Lookup("rq-stop")
	if !ok {
		t.Fatal("no request rq-stop")
	}
	r.Stop(reach.Cancel, "review6", "enough")
	if err := <-ended; !errors.As(err, new(*reach.StopError)) {
		t.Errorf("a stopped request's call ended with %v, want its stop", err)
	}
	if got := <-done; !strings.HasPrefix(got, ContentTypeJSON) || !strings.Contains(got, `"isError":true`) {
		t.Errorf("a stopped call's answer: %q, want an error", got)
	}

	// The client closes its session: the session's request ends.
	done = call(10, "")
	<-started
	cs.Close()
	if err := <-ended; err == nil {
		t.Errorf("the end of the session did not end its call")
	}
	<-done
	if n := s.inflight.len(); n != 0 {
		t.Errorf("%d fast calls still kept as in flight", n)
	}
}

// TestReview6FastCallsLeakNothing: after many fast calls, some cancelled
// by their client, the goroutines are as many as before, no call is kept
// as in flight, and neither the callers' context nor the request the
// calls ran in holds a context of theirs (each call's context is a child of its request's: one left
// registered is a leak for the request's life).
func TestReview6FastCallsLeakNothing(t *testing.T) {
	started, ended := make(chan string, 1), make(chan error, 1)
	echo := reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }}
	s, srv, rt, _ := review6Server(t, echo, blockTool(started, ended))
	_, h := review6Session(t, srv, "leaks")
	// The callers' context (an HTTP request's): a call's registers with it
	// while it runs, and must not after.
	base, stop := context.WithCancel(context.Background())
	defer stop()
	meta := fmt.Sprintf(`,"_meta":{%q:"rq-leak"}`, link.MetaRequest)
	one := func(id int) {
		var out bytes.Buffer
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"n":%d}%s}}`, id, id, meta)
		if _, ok := s.AnswerPost(base, h, []byte(body), &out); !ok || !bytes.Contains(out.Bytes(), []byte(`"result"`)) {
			t.Fatalf("call %d: %s", id, out.Bytes())
		}
	}
	cancelled := func(id int) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			var out bytes.Buffer
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"block","arguments":{}%s}}`, id, meta)
			s.AnswerPost(base, h, []byte(body), &out)
		}()
		<-started
		postHTTP(s, h, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, id))
		<-ended
		<-done
	}
	one(1)
	cancelled(2)
	r, ok := rt.Lookup("rq-leak")
	if !ok {
		t.Fatal("no request rq-leak")
	}
	children0 := ctxChildren(r.Context())
	if children0 < 0 {
		t.Fatalf("cannot read the children of the request's context (%T)", r.Context())
	}
	g0 := stableGoroutines()
	for i := range 200 {
		if i%20 == 0 {
			cancelled(1000 + i)
		} else {
			one(1000 + i)
		}
	}
	if n := ctxChildren(r.Context()); n != children0 {
		t.Errorf("the request's context holds %d children after 200 calls, %d before", n, children0)
	}
	if n := ctxChildren(base); n != 0 {
		t.Errorf("the callers' context holds %d children after the calls", n)
	}
	if n := s.inflight.len(); n != 0 {
		t.Errorf("%d fast calls still kept as in flight", n)
	}
	if g := stableGoroutines(); g > g0 {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the calls, %d before:\n%s", g, g0, buf[:runtime.Stack(buf, true)])
	}
}

// stableGoroutines is the number of goroutines once it stops falling
// (those of calls that ended may still be on their way out).
func stableGoroutines() int {
	n := runtime.NumGoroutine()
	for range 100 {
		time.Sleep(10 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}

// ctxChildren is the number of contexts registered with ctx's own cancel
// (its cancelCtx's children), or -1 if ctx has none this can read.
func ctxChildren(ctx context.Context) int {
	v := reflect.ValueOf(ctx)
	for range 10 {
		if v.Kind() == reflect.Interface {
			v = v.Elem()
		}
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return -1
		}
		e := v.Elem()
		if e.Type().String() == "context.cancelCtx" {
			return e.FieldByName("children").Len()
		}
		if f := e.FieldByName("cancelCtx"); f.IsValid() {
			if f.Kind() == reflect.Pointer {
				v = f
			} else {
				return f.FieldByName("children").Len()
			}
			continue
		}
		f := e.FieldByName("Context")
		if !f.IsValid() {
			return -1
		}
		v = f
	}
	return -1
}

// len is the number of ids m holds.
func (m *idMap[V]) len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}

// TestReview6StatelessAnswersAreTheirOwn: sessionless calls at once, of
// several clients (a request each), each with a payload of its own,
// answered by the fast lane into pooled answers whose _meta also gets the
// server's info: every answer holds its own payload, its client's
// request, the server's info, and a frame no other answer has.
func TestReview6StatelessAnswersAreTheirOwn(t *testing.T) {
	echo := reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
			runtime.Gosched()
			return args, nil
		}}
	s, _, _, _ := review6Server(t, echo)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", "echo")
	const clients, workers, calls = 3, 4, 25
	before := s.fastCalls.Load()
	var (
		mu       sync.Mutex
		frames   = map[string]string{}
		requests = map[int]map[string]bool{}
		wg       sync.WaitGroup
	)
	for ci := range clients { // before any worker reads the map
		requests[ci] = map[string]bool{}
	}
	for ci := range clients {
		for w := range workers {
			wg.Go(func() {
				for i := range calls {
					pay := fmt.Sprintf("pay-%d-%d-%d", ci, w, i)
					body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q},"_meta":{%q:%q,%q:{},%q:{"name":"client-%d","version":"1"}}}}`,
						i, pay, metaProtocolVersion, mcpwire.StatelessProtocol, metaClientCapabilities, metaClientInfo, ci)
					code, got := postHTTP(s, h, body)
					if code != http.StatusOK {
						t.Errorf("%s: status %d: %s", pay, code, got)
						return
					}
					ans, ok := ownAnswer(t, pay, got)
					if !ok {
						return
					}
					m := ans.Result.Meta
					if m[metaServerInfo] == nil || m[link.MetaStatus] != "success" {
						t.Errorf("%s: _meta without the server's info or a success: %s", pay, got)
					}
					req, _ := m[link.MetaRequest].(string)
					f, _ := m[link.MetaFrame].(string)
					mu.Lock()
					requests[ci][req] = true
					if other, dup := frames[f]; dup || f == "" {
						t.Errorf("%s: frame %q, also %s's", pay, f, other)
					}
					frames[f] = pay
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if n := s.fastCalls.Load() - before; n != clients*workers*calls {
		t.Errorf("the fast lane answered %d calls, want %d", n, clients*workers*calls)
	}
	seen := map[string]int{}
	for ci, rs := range requests {
		for r := range rs {
			if other, ok := seen[r]; ok || r == "" {
				t.Errorf("client %d's calls ran in request %q, also client %d's", ci, r, other)
			}
			seen[r] = ci
		}
	}
}
