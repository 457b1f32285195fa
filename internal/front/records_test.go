package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// restartable is a gateway front on one URL whose process can be
// restarted (start): each start makes a new runtime and Server over the
// same store of session records, and the URL serves it from then on.
type restartable struct {
	t       *testing.T
	srv     *httptest.Server
	records store.Store
	authn   *auth.Authenticator
	max     int
	log     *slog.Logger // the next start's, if set
	tools   []reach.Tool // the next start's, beside echo
	cur     atomic.Pointer[Server]
	h       atomic.Pointer[http.Handler]
}

func newRestartable(t *testing.T, authn *auth.Authenticator, max int) *restartable {
	t.Helper()
	g := &restartable{t: t, records: store.NewMemory(), authn: authn, max: max}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*g.h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(g.srv.Close)
	g.start()
	return g
}

// start ends the running Server, if any, and starts a new one, as a
// restart of reach serve does.
func (g *restartable) start() *Server {
	if old := g.cur.Load(); old != nil {
		old.Close()
	}
	rt := reach.New(nil)
	rt.MustRegister(echoTool)
	rt.MustRegister(g.tools...)
	life, cancel := context.WithCancel(context.Background())
	g.t.Cleanup(cancel)
	owned := link.NewOwned(life, rt, time.Minute, link.Budgets{})
	g.t.Cleanup(owned.EndAll)
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Authn: g.authn, Tools: allTools{rt},
		Levels: &Levels{}, IdleAfter: time.Minute, Records: g.records, MaxSessions: g.max, Logger: g.log})
	s.SyncTools()
	g.t.Cleanup(s.Close)
	var h http.Handler = s.Handler()
	if g.authn != nil {
		h = g.authn.Middleware(h)
	}
	g.h.Store(&h)
	g.cur.Store(s)
	return s
}

// connect opens a session with the Go SDK's client, as key's principal
// ("" without auth).
func (g *restartable) connect(key string) (*mcp.ClientSession, error) {
	hc := http.DefaultClient
	if key != "" {
		hc = &http.Client{Transport: keyTransport{"X-Reach-Key", key}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := c.Connect(g.t.Context(), &mcp.StreamableClientTransport{Endpoint: g.srv.URL, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err == nil {
		g.t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// post sends a tools/call of echo on session sid as key's principal and
// returns the status and the answer.
func (g *restartable) post(sid, key string) (int, string) {
	g.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"again"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpwire.HeaderSession, sid)
	req.Header.Set(mcpwire.HeaderProtocol, mcpwire.SessionProtocol)
	if key != "" {
		req.Header.Set("X-Reach-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// echo calls the echo tool on cs and fails the test unless it answers.
func echo(t *testing.T, cs *mcp.ClientSession, text string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("echo %q: %v", text, err)
	}
	if res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, text) {
		t.Fatalf("echo %q: %+v", text, res)
	}
}

// A client that comes back to a restarted gateway with its session's id
// goes on with it: the session is taken over under the same id, from its
// record, and its calls answered, on the fast lane too; the store never
// holds the id itself.
func TestSessionOutlivesRestart(t *testing.T) {
	g := newRestartable(t, nil, 0)
	cs, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, cs, "before")
	g.cur.Load().SweepClients() // writes the session's use
	rec, err := g.records.GetSession(t.Context(), hashID(cs.ID()))
	if err != nil || rec.Protocol != mcpwire.SessionProtocol || rec.Request == "" || !strings.Contains(string(rec.Init), `"agent"`) {
		t.Fatalf("the session's record = %+v, %v", rec, err)
	}
	if strings.Contains(string(rec.Init)+rec.Hash+rec.Request, cs.ID()) {
		t.Fatal("the record holds the session id")
	}

	s2 := g.start()
	echo(t, cs, "after the restart") // through the SDK's client, same session id
	if code, body := g.post(cs.ID(), ""); code != http.StatusOK || !strings.Contains(body, "again") {
		t.Fatalf("a call on the session taken over = %d %s", code, body)
	}
	if s2.FastCalls() == 0 {
		t.Error("the session taken over is not answered on the fast lane")
	}
	if ss := s2.sessionByID(cs.ID()); ss == nil || ss.InitializeParams().ClientInfo.Name != "agent" {
		t.Error("the session taken over does not have its client's initialize params")
	}
}

// A session its client deleted does not come back after a restart; nor
// does one idle for the gap, nor an id never given.
func TestSessionEndedStaysEnded(t *testing.T) {
	g := newRestartable(t, nil, 0)
	deleted, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, deleted, "x")
	idle, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, idle, "y")
	deleted.Close() // DELETE
	// As the sweeps left it after the gap: last used longer ago.
	g.records.TouchSessions(t.Context(), time.Now().Add(-2*time.Minute), []store.SessionUse{{Hash: hashID(idle.ID())}})
	g.start()
	for what, sid := range map[string]string{"deleted": deleted.ID(), "idle": idle.ID(), "never given": "NOSUCHSESSION0000000000000"} {
		if code, body := g.post(sid, ""); code != http.StatusNotFound {
			t.Errorf("a call on a session %s, after a restart = %d %s; want 404", what, code, body)
		}
	}
	if _, err := g.records.GetSession(t.Context(), hashID(deleted.ID())); err == nil {
		t.Error("the deleted session's record is kept")
	}

	// A DELETE of a session known only to the store deletes its record.
	other, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	g.start()
	req, _ := http.NewRequest(http.MethodDelete, g.srv.URL, nil)
	req.Header.Set(mcpwire.HeaderSession, other.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE of a session in the store only = %d, want 204", resp.StatusCode)
	}
	if code, body := g.post(other.ID(), ""); code != http.StatusNotFound {
		t.Errorf("a call on it after = %d %s; want 404", code, body)
	}
}

// With auth, a session is taken over for who opened it only: another
// principal, or the same principal of another tenant, gets 403
// not_your_session, as on a session of the same process, and the session
// goes on for its owner.
func TestSessionTakenOverByItsOwnerOnly(t *testing.T) {
	_, authn, keys := authServer(t)
	g := newRestartable(t, authn, 0)
	cs, err := g.connect(keys["alice@acme"])
	if err != nil {
		t.Fatal(err)
	}
	echo(t, cs, "mine")
	g.start()
	for _, who := range []string{"bob@globex", "alice@globex"} {
		code, body := g.post(cs.ID(), keys[who])
		if code != http.StatusForbidden || !strings.Contains(body, "not_your_session") {
			t.Errorf("%s on alice@acme's session after a restart = %d %s; want 403 not_your_session", who, code, body)
		}
	}
	if g.cur.Load().sessionByID(cs.ID()) != nil {
		t.Error("another principal's request took the session over")
	}
	echo(t, cs, "still mine")
	if code, body := g.post(cs.ID(), keys["bob@globex"]); code != http.StatusForbidden {
		t.Errorf("bob on alice's session once taken over = %d %s; want 403", code, body)
	}
}

// One principal opens at most MaxSessions sessions: the next initialize is
// refused with 429 and a JSON-RPC error that says what to do, until one of
// its sessions ends; another principal is not held back.
func TestSessionsPerPrincipal(t *testing.T) {
	_, authn, keys := authServer(t)
	g := newRestartable(t, authn, 2)
	a1, err := g.connect(keys["alice@acme"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.connect(keys["alice@acme"]); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, g.srv.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Reach-Key", keys["alice@acme"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var refusal struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&refusal)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || refusal.ID != 1 || !strings.Contains(refusal.Error.Message, "sessions_per_principal") ||
		!strings.Contains(refusal.Error.Message, "DELETE") || resp.Header.Get(mcpwire.HeaderSession) != "" {
		t.Errorf("a third session of alice = %d %+v; want 429 and what to do", resp.StatusCode, refusal)
	}
	if _, err := g.connect(keys["alice@acme"]); err == nil {
		t.Error("the SDK's client opened a third session of alice")
	}
	if _, err := g.connect(keys["bob@globex"]); err != nil {
		t.Errorf("bob is held back by alice's sessions: %v", err)
	}
	a1.Close()
	if _, err := g.connect(keys["alice@acme"]); err != nil {
		t.Errorf("alice cannot open a session once one of hers ended: %v", err)
	}
	if n := g.cur.Load().Sessions()[sessionOwner(&auth.Identity{Principal: "alice", Tenant: "acme"})]; n != 2 {
		t.Errorf("alice's sessions counted = %d, want 2", n)
	}
}

// The bound holds whatever the initialize looks like: one in a batch, or
// one whose "method" key is written with escapes, which the SDK reads as
// any other but the envelope newSessions reads does not, gets the bound's
// JSON-RPC error and no session; the count stays at the bound.
func TestSessionsPerPrincipalWhateverTheEnvelope(t *testing.T) {
	_, authn, keys := authServer(t)
	g := newRestartable(t, authn, 2)
	for range 2 {
		if _, err := g.connect(keys["alice@acme"]); err != nil {
			t.Fatal(err)
		}
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	for what, body := range map[string]string{
		"in a batch":          "[" + init + "]",
		"with an escaped key": strings.Replace(init, `"method"`, `"meth\u006fd"`, 1),
	} {
		req, _ := http.NewRequest(http.MethodPost, g.srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Reach-Key", keys["alice@acme"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"code":-32005`) || !strings.Contains(string(b), "sessions_per_principal") {
			t.Errorf("a third initialize of alice %s = %d %s; want the bound's error", what, resp.StatusCode, b)
		}
		if sid := resp.Header.Get(mcpwire.HeaderSession); sid != "" {
			if code, _ := g.post(sid, keys["alice@acme"]); code != http.StatusNotFound {
				t.Errorf("a call on the session of the initialize refused %s = %d; want 404", what, code)
			}
		}
	}
	if n := g.cur.Load().Sessions()[sessionOwner(&auth.Identity{Principal: "alice", Tenant: "acme"})]; n != 2 {
		t.Errorf("alice's sessions counted = %d, want 2", n)
	}
}

// heldRecords is a store whose first GetSession, once it has read the
// record, waits until released: a request that read a session's record
// is held there while others go on.
type heldRecords struct {
	store.Store
	held          atomic.Bool
	read, release chan struct{}
}

func (h *heldRecords) GetSession(ctx context.Context, hash string) (*store.SessionRecord, error) {
	rec, err := h.Store.GetSession(ctx, hash)
	if h.held.CompareAndSwap(false, true) {
		close(h.read)
		<-h.release
	}
	return rec, err
}

// A DELETE of a session known only to the store, while a call of the same
// session is taking it over, ends the session: the call that read the
// record before the DELETE does not make it again after the 204.
func TestSessionDeletedWhileTakenOver(t *testing.T) {
	g := newRestartable(t, nil, 0)
	cs, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, cs, "before")
	held := &heldRecords{Store: g.records, read: make(chan struct{}), release: make(chan struct{})}
	g.records = held
	s := g.start()
	call := make(chan int)
	go func() {
		code, _ := g.post(cs.ID(), "")
		call <- code
	}()
	<-held.read // the call read the record
	req, _ := http.NewRequest(http.MethodDelete, g.srv.URL, nil)
	req.Header.Set(mcpwire.HeaderSession, cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE = %d, want 204", resp.StatusCode)
	}
	close(held.release)
	<-call
	if s.sessionByID(cs.ID()) != nil {
		t.Error("the session deleted is open again")
	}
	if code, body := g.post(cs.ID(), ""); code != http.StatusNotFound {
		t.Errorf("a call on the session after its DELETE = %d %s; want 404", code, body)
	}
}

// logged keeps the records a logger handles.
type logged struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logged) Enabled(context.Context, slog.Level) bool { return true }
func (l *logged) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logged) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logged) WithGroup(string) slog.Handler      { return l }

// The log line of a session taken over names it as the SDK's lines do
// (session_id, a SessionRef: the short hash the gateway's redactor leaves
// as it is), so that an operator can follow the session from one process
// to the next; a plain string under "session" is redacted.
func TestSessionTakenOverLogged(t *testing.T) {
	g := newRestartable(t, nil, 0)
	cs, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	s := g.start()
	l := &logged{}
	s.log = slog.New(l)
	echo(t, cs, "after the restart")
	want := SessionRef("#" + hashID(cs.ID())[:12])
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if !strings.Contains(r.Message, "taken over") {
			continue
		}
		found := false
		r.Attrs(func(a slog.Attr) bool {
			if strings.Contains(a.Value.String(), cs.ID()) {
				t.Errorf("the log holds the session id: %s=%v", a.Key, a.Value)
			}
			if ref, ok := a.Value.Any().(SessionRef); ok && a.Key == "session_id" && ref == want {
				found = true
			}
			return true
		})
		if !found {
			t.Errorf("the take-over's log line does not name the session as the SDK's do (session_id=%s)", want)
		}
		return
	}
	t.Error("no log line of the take-over")
}

// heldLog is a log whose first line with a message, once armed, waits
// until released.
type heldLog struct {
	msg            string
	armed          *atomic.Bool
	entered, until chan struct{}
}

func (h heldLog) Enabled(context.Context, slog.Level) bool { return true }
func (h heldLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg && h.armed.CompareAndSwap(true, false) {
		close(h.entered)
		<-h.until
	}
	return nil
}
func (h heldLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h heldLog) WithGroup(string) slog.Handler      { return h }

// A request of a session that comes while another request of its client
// is taking the session over (the SDK has made it, and has not yet
// initialized it) waits for the take-over, rather than getting the SDK's
// 404 or being refused as made during the session's initialization: a
// client back after a restart sends several requests at once.
func TestSessionCallDuringTakeOver(t *testing.T) {
	g := newRestartable(t, nil, 0)
	cs, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	g.log = slog.New(heldLog{msg: "server session connected", armed: &armed, entered: entered, until: release})
	g.start()
	armed.Store(true)
	type answer struct {
		code int
		body string
	}
	first, second := make(chan answer, 1), make(chan answer, 1)
	go func() {
		code, body := g.post(cs.ID(), "")
		first <- answer{code, body}
	}()
	<-entered // the take-over's session is made, not yet initialized
	go func() {
		code, body := g.post(cs.ID(), "")
		second <- answer{code, body}
	}()
	// The second request is either answered at once, while the session
	// is being made (what this test is about), or waits for the
	// take-over; it is let go after a while either way.
	var a answer
	select {
	case a = <-second:
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if a.code == 0 {
		a = <-second
	}
	for what, a := range map[string]answer{"the call that took the session over": <-first, "a call during the take-over": a} {
		if a.code != http.StatusOK || !strings.Contains(a.body, "again") || strings.Contains(a.body, `"error"`) {
			t.Errorf("%s = %d %s", what, a.code, a.body)
		}
	}
}

// downRecords is a store whose session records cannot be read while down.
type downRecords struct {
	store.Store
	down atomic.Bool
}

func (d *downRecords) GetSession(ctx context.Context, hash string) (*store.SessionRecord, error) {
	if d.down.Load() {
		return nil, errors.New("the database is unreachable")
	}
	return d.Store.GetSession(ctx, hash)
}

// A session whose record cannot be read (the store down, just after a
// restart) gets 503 and a try-again, not the 404 of a session that is
// gone, which a client of the TypeScript SDK 1.x never recovers from; once
// the store answers, the session is taken over.
func TestSessionRecordUnreadable(t *testing.T) {
	g := newRestartable(t, nil, 0)
	cs, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	down := &downRecords{Store: g.records}
	down.down.Store(true)
	g.records = down
	g.start()
	if code, body := g.post(cs.ID(), ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "store_unavailable") {
		t.Errorf("a call on a session whose record cannot be read = %d %s; want 503 store_unavailable", code, body)
	}
	down.down.Store(false)
	if code, body := g.post(cs.ID(), ""); code != http.StatusOK || !strings.Contains(body, "again") {
		t.Errorf("a call on the session once the store answers = %d %s", code, body)
	}
}

// lockedLog is a log's text, written and read under a lock.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// unwritable is a store whose session records cannot be written.
type unwritable struct{ store.Store }

func (unwritable) StoreSession(context.Context, *store.SessionRecord) error {
	return errors.New("the database is unreachable")
}

// A session whose record cannot be written at its initialize is still
// opened and served by the process that opened it (a warning says the
// record was not stored); it has no record to take over after a restart
// (404, as without records), and its id is in no log line.
func TestSessionRecordUnwritable(t *testing.T) {
	g := newRestartable(t, nil, 0)
	logs := &lockedLog{}
	g.log = slog.New(slog.NewTextHandler(logs, nil))
	g.records = unwritable{g.records}
	g.start()
	cs, err := g.connect("")
	if err != nil {
		t.Fatalf("initialize with a record that cannot be written: %v; want the session opened", err)
	}
	echo(t, cs, "before")
	if code, body := g.post(cs.ID(), ""); code != http.StatusOK || !strings.Contains(body, "again") {
		t.Errorf("a call on the session = %d %s", code, body)
	}
	if !strings.Contains(logs.String(), "record was not stored") || strings.Contains(logs.String(), cs.ID()) {
		t.Errorf("the log: %s; want the record's failure said, without the session id", logs.String())
	}
	g.start()
	if code, body := g.post(cs.ID(), ""); code != http.StatusNotFound {
		t.Errorf("a call on it after a restart = %d %s; want 404 (no record)", code, body)
	}
}

// With the SDK's compatibility setting allowsessionsinstateless=1, its
// stateless handler asks GetSessionID for ids too, from requests that
// hold no turn, and could be handed the id of a session being taken over:
// sessions are then not taken over at all (a restart answers 404, as
// without records).
func TestSessionsNotTakenOverWithSessionsInStateless(t *testing.T) {
	g := newRestartable(t, nil, 0)
	cs, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, cs, "before")
	t.Setenv("MCPGODEBUG", "other=2, allowsessionsinstateless = 1")
	g.start()
	if code, body := g.post(cs.ID(), ""); code != http.StatusNotFound {
		t.Errorf("a call on a recorded session after a restart = %d %s; want 404, nothing taken over", code, body)
	}
	for v, want := range map[string]bool{"": false, "allowsessionsinstateless=1": true, "allowsessionsinstateless=0": false,
		"allowsessionsinstateless=1,allowsessionsinstateless=0": false, "x=1, allowsessionsinstateless =1 ": true, "allowsessionsinstatelessX=1": false} {
		if got := sessionsInStateless(v); got != want {
			t.Errorf("sessionsInStateless(%q) = %v, want %v", v, got, want)
		}
	}
}

// A session whose record ended through another instance (EndRecorded, as
// the cluster's wake-up calls it) ends here: its requests get 404, and a
// take-over does not bring it back. An idle gap's end spares a session
// used here since its use was last written, and ends one that was not;
// a recheck after the wake-ups were missed ends a session whose record
// is gone.
func TestSessionEndedElsewhereEndsHere(t *testing.T) {
	g := newRestartable(t, nil, 0)
	s := g.cur.Load()
	open := func() (*mcp.ClientSession, string) {
		cs, err := g.connect("")
		if err != nil {
			t.Fatal(err)
		}
		echo(t, cs, "first")
		return cs, hashID(cs.ID())
	}
	// until polls sid's call until it is answered 404 (the SDK closes the
	// session in the background).
	gone := func(sid, what string) {
		t.Helper()
		var code int
		var body string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if code, body = g.post(sid, ""); code == http.StatusNotFound {
				return
			}
		}
		t.Fatalf("%s: the session's call = %d %s, want 404", what, code, body)
	}

	cs, hash := open()
	if err := g.records.DeleteSession(t.Context(), hash); err != nil {
		t.Fatal(err)
	}
	s.EndRecorded(hash, false)
	gone(cs.ID(), "deleted elsewhere")

	cs, hash = open()
	if err := g.records.DeleteSession(t.Context(), hash); err != nil { // as another instance's sweep does
		t.Fatal(err)
	}
	s.EndRecorded(hash, true) // used since its use was written
	if code, body := g.post(cs.ID(), ""); code != http.StatusOK {
		t.Fatalf("a session used here, swept as idle elsewhere = %d %s; want it kept", code, body)
	}
	s.SweepClients() // writes its use
	s.EndRecorded(hash, true)
	gone(cs.ID(), "idle, not used since its use was written")

	cs, hash = open()
	if err := g.records.DeleteSession(t.Context(), hash); err != nil {
		t.Fatal(err)
	}
	s.RecheckRecorded(t.Context())
	gone(cs.ID(), "deleted while this instance did not listen")
}

// An /sse stream is a session of its principal's (the HTTP+SSE
// transport's), counted against sessions_per_principal with its
// Streamable HTTP sessions from its GET to its end: past the bound, a GET
// /sse gets 429 and what to do, and so does an initialize; the
// principal's other sessions go on, another principal is not held back,
// and once a stream closes the principal may open one again.
func TestSSEStreamsPerPrincipal(t *testing.T) {
	_, authn, keys := authServer(t)
	g := newRestartable(t, authn, 2)
	alice, bob := keys["alice@acme"], keys["bob@globex"]
	// stream opens a GET /sse as key's principal; cancel closes it.
	stream := func(key string) (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.srv.URL+SSEPath, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("X-Reach-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); resp.Body.Close() })
		return resp, cancel
	}
	cs, err := g.connect(alice)
	if err != nil {
		t.Fatal(err)
	}
	first, closeFirst := stream(alice)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("alice's first /sse stream = %d", first.StatusCode)
	}
	over, _ := stream(alice)
	var refusal struct {
		Error struct{ Code, Message, Suggestion string } `json:"error"`
	}
	json.NewDecoder(over.Body).Decode(&refusal)
	if over.StatusCode != http.StatusTooManyRequests || refusal.Error.Code != "too_many_sessions" ||
		!strings.Contains(refusal.Error.Message, "sessions_per_principal") || !strings.Contains(refusal.Error.Suggestion, "/sse") {
		t.Errorf("alice's /sse stream past the bound = %d %+v; want 429 and what to do", over.StatusCode, refusal)
	}
	if _, err := g.connect(alice); err == nil {
		t.Error("alice opened a Streamable HTTP session past the bound, her /sse stream not counted")
	}
	echo(t, cs, "still")
	if b, _ := stream(bob); b.StatusCode != http.StatusOK {
		t.Errorf("bob's /sse stream = %d; alice's sessions hold him back", b.StatusCode)
	}
	closeFirst()
	var code int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		r, cancel := stream(alice)
		if code = r.StatusCode; code == http.StatusOK {
			cancel()
			return
		}
	}
	t.Fatalf("alice's /sse stream once her first closed = %d, want 200", code)
}

// A session's tool calls are its uses, on every path: one answered
// through the SDK (a client that can sample gets its answers as streams)
// and one still running. The sweep writes them, so that no instance's
// idle sweep takes the record of a session in use for an idle one, and an
// idle end heard from another instance spares the session: its call runs
// to its answer, and the session goes on.
func TestSessionInUseNotEndedIdle(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	slow := reach.Tool{Name: "slow", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			entered <- struct{}{}
			select {
			case <-release:
				return json.RawMessage(`{"done":true}`), nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}}
	g := newRestartable(t, nil, 0)
	g.tools = []reach.Tool{slow}
	s := g.start()
	c := mcp.NewClient(&mcp.Implementation{Name: "sampler", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("no model here")
		}})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: g.srv.URL, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.SessionProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	hash := hashID(cs.ID())
	used := func() time.Time {
		t.Helper()
		rec, err := g.records.GetSession(t.Context(), hash)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Used
	}
	// endedIdle is another instance's sweep: the record, idle as it
	// reads it, deleted, and its end heard here.
	endedIdle := func() {
		if err := g.records.DeleteSession(t.Context(), hash); err != nil {
			t.Fatal(err)
		}
		s.EndRecorded(hash, true)
	}
	echo(t, cs, "first")
	s.SweepClients() // what the session did so far written
	before := used()
	time.Sleep(2 * time.Millisecond)
	echo(t, cs, "through the SDK")
	s.SweepClients()
	if !used().After(before) {
		t.Error("a call answered through the SDK was not written as the session's use")
	}
	echo(t, cs, "again")
	endedIdle()
	if code, body := g.post(cs.ID(), ""); code != http.StatusOK {
		t.Fatalf("a session called through the SDK since its use was written, swept as idle elsewhere = %d %s; want it kept", code, body)
	}

	if err := g.records.StoreSession(t.Context(), &store.SessionRecord{Hash: hash, Used: time.Now()}); err != nil { // as its client opened it
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
		if err == nil && res.IsError {
			err = fmt.Errorf("%+v", res.Content[0])
		}
		done <- err
	}()
	<-entered
	s.SweepClients() // the call's start written
	before = used()
	time.Sleep(2 * time.Millisecond)
	s.SweepClients()
	if !used().After(before) {
		t.Error("a session with a call running was not written as used: its record ages as if idle")
	}
	endedIdle()
	close(release)
	if err := <-done; err != nil {
		t.Errorf("a call running when an idle end was heard: %v; want its answer", err)
	}
	echo(t, cs, "after the long call")
}

// hookedRecords is a store of session records that tells get of each
// read of a record, numbered from 1, once it is read.
type hookedRecords struct {
	store.Store
	n   atomic.Int32
	get func(hash string, n int)
}

func (h *hookedRecords) GetSession(ctx context.Context, hash string) (*store.SessionRecord, error) {
	rec, err := h.Store.GetSession(ctx, hash)
	if h.get != nil {
		h.get(hash, int(h.n.Add(1)))
	}
	return rec, err
}

// A session whose record ends (its DELETE on another instance) while this
// instance takes it over, after the take-over read the record and before
// the session is made again here, is not served: the end's wake-up finds
// no session yet, so the take-over reads the record once more.
func TestSessionEndedWhileTakenOver(t *testing.T) {
	g := newRestartable(t, nil, 0)
	cs, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, cs, "first")
	hr := &hookedRecords{Store: g.records}
	g.records = hr
	s := g.start() // the session now only in the store
	sid, hash := cs.ID(), hashID(cs.ID())
	hr.get = func(h string, n int) {
		if h == hash && n == 2 { // the take-over's read under its lock
			if err := hr.Store.DeleteSession(context.Background(), hash); err != nil {
				t.Error(err)
			}
			s.EndRecorded(hash, false) // the DELETE's wake-up, heard at once
		}
	}
	for i := range 2 {
		if code, body := g.post(sid, ""); code != http.StatusNotFound {
			t.Fatalf("call %d of a session deleted elsewhere during its take-over = %d %s; want 404", i, code, body)
		}
	}
}

// A session taken over here whose record ends while this instance does
// not listen is ended by the recheck when it listens again, however soon:
// its record was read, so it is no write still on its way.
func TestRecheckEndsTakenOverSession(t *testing.T) {
	g := newRestartable(t, nil, 0)
	cs, err := g.connect("")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, cs, "first")
	s := g.start()
	echo(t, cs, "taken over")
	if err := g.records.DeleteSession(t.Context(), hashID(cs.ID())); err != nil {
		t.Fatal(err)
	}
	s.RecheckRecorded(t.Context())
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if code, body = g.post(cs.ID(), ""); code == http.StatusNotFound {
			return
		}
	}
	t.Fatalf("a taken-over session whose record ended while unheard = %d %s after the recheck; want 404", code, body)
}
