package front

// MCP sessions that outlive the process that opened them, and a bound on
// how many one principal keeps open.
//
// The go-sdk keeps a Streamable HTTP session in memory only: after a
// restart, or on another instance sharing the store, its id is unknown
// and every request naming it gets 404. The spec's answer is for the
// client to initialize again, which the TypeScript SDK 1.x client (and
// what is built on it) does not do: it stays broken until its process
// restarts. So each session opened here is recorded in the store
// (store.Sessions: its id's SHA-256, never the id; who opened it; the
// initialize params its client sent), and a request that names an id the
// SDK does not know but the store does, from who opened it, is answered
// by a session made again under that id, initialized on its client's
// behalf with the params it sent (as resumeSSE does on /sse).
//
// The SDK takes a new session's id from ServerOptions.GetSessionID, which
// is told nothing of the request: every new session's POST therefore
// takes a turn (serveNew), and the id it asks for (one to take over, or
// "" for a fresh random one) is the one GetSessionID gives while the turn
// is held. The turn is held only from the start of the SDK's handling of
// the POST to its call of GetSessionID, before it reads the body.
//
// A known session's requests never read the store: the record is looked
// up only when the SDK's sessions have no such id. A session's use is
// noted with a flag its calls set, and the sweep writes the uses since the
// last one in one write (TouchSessions).

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxInitRecord bounds the initialize params kept in a session's record:
// a client that sends more (a huge clientInfo) keeps its session in this
// process only.
const maxInitRecord = 64 << 10

// hashID is how a session id is named in the store: its SHA-256, in hex.
func hashID(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

// idTurn is one new session's turn at the SDK's GetSessionID: the id to
// give it ("" for a fresh one), and whether the SDK took it.
type idTurn struct {
	id    string
	taken bool
}

// nextSessionID is the SDK's GetSessionID: the id the POST holding the
// turn asked for, or a fresh one, 130 random bits from crypto/rand (the
// SDK's own default), which no one can guess.
func (s *Server) nextSessionID() string {
	t := s.turn.Swap(nil)
	if t == nil {
		return rand.Text() // a session made outside serveNew (none is)
	}
	t.taken = true
	s.turnMu.Unlock()
	if t.id == "" {
		return rand.Text()
	}
	return t.id
}

// serveNew gives the SDK a POST that makes a new session, whose id is id
// ("" for a fresh one). The SDK calls GetSessionID, if it gets that far,
// in this goroutine, before it reads the body.
func (s *Server) serveNew(sdk http.Handler, w http.ResponseWriter, r *http.Request, id string) {
	t := &idTurn{id: id}
	s.turnMu.Lock()
	s.turn.Store(t)
	defer func() {
		if !t.taken { // refused before it asked (a bad header)
			s.turn.Store(nil)
			s.turnMu.Unlock()
		}
	}()
	sdk.ServeHTTP(w, r)
}

// newSessions serves the POSTs without a session id on /mcp: an
// initialize past the caller's bound is refused; every one takes its
// turn at a session id (serveNew).
func (s *Server) newSessions(sdk http.Handler, w http.ResponseWriter, r *http.Request) {
	fresh := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serveNew(sdk, w, r, "") })
	if s.maxSessions <= 0 {
		fresh.ServeHTTP(w, r)
		return
	}
	s.withMessage(fresh, w, r, func(body []byte, msg mcpwire.Message) {
		if msg.Method == "initialize" {
			if owner, ok := s.ownerOf(r); ok && s.atCap(owner) {
				s.tooManySessions(w, msg.ID)
				return
			}
		}
		s.passOn(fresh, w, r, body)
	})
}

// ownerOf returns the sessionOwner of who sends r; false with auth and no
// identity (bindSessions refuses it before).
func (s *Server) ownerOf(r *http.Request) (string, bool) {
	if s.authn == nil {
		return "", true
	}
	id, ok := auth.IdentityFrom(r.Context())
	if !ok {
		return "", false
	}
	return sessionOwner(id), true
}

// atCap reports whether owner keeps as many sessions open as it may.
func (s *Server) atCap(owner string) bool {
	if s.maxSessions <= 0 {
		return false
	}
	s.countMu.Lock()
	defer s.countMu.Unlock()
	return s.owners[owner] >= s.maxSessions
}

// tooManySessions refuses an initialize (JSON-RPC id) past the bound:
// 429, and a JSON-RPC error that says what to do. Refused rather than
// making room by closing the principal's oldest idle session: that
// session's client did nothing wrong, and a client of the TypeScript SDK
// 1.x whose session is gone stays broken (it never initializes again);
// the client that opens one too many is the one told, at once, why.
func (s *Server) tooManySessions(w http.ResponseWriter, id json.RawMessage) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	buf := mcpwire.GetBuffer()
	defer mcpwire.PutBuffer(buf)
	mcpwire.AppendResponse(buf, id, nil, s.tooMany())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(buf.Bytes())
}

// tooMany is the JSON-RPC error of an initialize past the bound.
func (s *Server) tooMany() *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeTooManySessions, Message: fmt.Sprintf("too many MCP sessions: this principal has %d open (Streamable HTTP sessions and /sse streams), "+
		"the most it may (sessions_per_principal). End the sessions you no longer use (HTTP DELETE with their Mcp-Session-Id; close the /sse streams), "+
		"or wait until they have been idle for %s (idle_gap), then initialize again; reuse one session for many calls", s.maxSessions, s.idleAfter)}
}

// codeTooManySessions is the JSON-RPC error code of tooManySessions, in
// the range JSON-RPC leaves to servers.
const codeTooManySessions = -32005

// claimSession counts a session whose initialize is being answered
// against its owner's bound, in the same step as it checks the bound:
// false, and not counted, past it. newSessions refuses most initializes
// past the bound before the SDK makes a session, with a 429; this is what
// holds the bound, whatever newSessions read: initializes that all pass
// its check at once, one in a batch, or one whose "method" key is written
// with escapes (the SDK decodes it, the envelope reader does not). Those
// get the same JSON-RPC error, in the SDK's answer, and no session.
func (s *Server) claimSession(st *session, owner string) bool {
	if st.counted.Load() != nil {
		return true // an initialize again on a session counted
	}
	s.countMu.Lock()
	defer s.countMu.Unlock()
	if s.maxSessions > 0 && s.owners[owner] >= s.maxSessions {
		return false
	}
	if !st.counted.CompareAndSwap(nil, &owner) {
		return true
	}
	if s.owners == nil {
		s.owners = map[string]int{}
	}
	s.owners[owner]++
	return true
}

// uncount counts st's session out of its owner's.
func (s *Server) uncount(st *session) {
	if owner := st.counted.Swap(nil); owner != nil {
		s.release(*owner)
	}
}

// release counts one of owner's sessions out.
func (s *Server) release(owner string) {
	s.countMu.Lock()
	if s.owners[owner]--; s.owners[owner] <= 0 {
		delete(s.owners, owner)
	}
	s.countMu.Unlock()
}

// claimStream counts a GET /sse, the session of the HTTP+SSE transport
// (from its GET to the stream's end: the SDK makes the session at the
// GET, and it holds it, its stream and its request until then), against
// its owner's bound, which Streamable HTTP sessions count against too;
// false, and not counted, past it. Without it one principal could hold
// any number of sessions open through /sse.
func (s *Server) claimStream(owner string) bool {
	if s.maxSessions <= 0 {
		return true
	}
	s.countMu.Lock()
	defer s.countMu.Unlock()
	if s.owners[owner] >= s.maxSessions {
		return false
	}
	if s.owners == nil {
		s.owners = map[string]int{}
	}
	s.owners[owner]++
	return true
}

// tooManyStreams refuses a GET /sse past its owner's bound: 429, and
// what to do (a GET has no JSON-RPC id to answer; the error is the API's).
// A stream does not end of itself when idle: its client closes it.
func (s *Server) tooManyStreams(w http.ResponseWriter) {
	httpjson.WriteError(w, http.StatusTooManyRequests, "too_many_sessions",
		fmt.Sprintf("Too many MCP sessions: this principal has %d open (Streamable HTTP sessions and /sse streams), the most it may (sessions_per_principal).", s.maxSessions),
		"Close the /sse streams you no longer use and end the sessions you no longer use (HTTP DELETE with their Mcp-Session-Id), then connect again; reuse one session for many calls.")
}

// Sessions returns how many MCP sessions (and /sse streams) each owner keeps open (owner:
// "tenant"/"principal", quoted; "" for the local user without auth).
func (s *Server) Sessions() map[string]int {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	out := make(map[string]int, len(s.owners))
	for k, v := range s.owners {
		out[k] = v
	}
	return out
}

// streamableSession returns the Streamable HTTP session (one with an
// id, not of /sse) an initialize opens, and its owner (the TokenInfo
// user bindSessions gave its request; "" without auth); nil for any
// other.
func streamableSession(ctx context.Context, req mcp.Request) (*mcp.ServerSession, string) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil || ss.ID() == "" {
		return nil, "" // stdio, in memory, the sessionless protocol
	}
	if _, ok := ctx.Value(sseStreamKey{}).(*sseStream); ok {
		return nil, "" // /sse: its stream is its session
	}
	owner := ""
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		owner = ex.TokenInfo.UserID
	}
	return ss, owner
}

// opening counts a session whose initialize comes in against its owner's
// bound (claimSession); past it, the error to answer.
func (s *Server) opening(ctx context.Context, req mcp.Request) error {
	ss, owner := streamableSession(ctx, req)
	if ss == nil || s.claimSession(s.sessionFor(ss), owner) {
		return nil
	}
	return s.tooMany()
}

// opened handles a session's initialize once the SDK made its answer
// (err, its error), before the answer is sent: a session not initialized
// is counted out again; one that is, unless it is one taken over, is
// recorded in the store, durably, so that no client holds the id of a
// session that a kill -9 could leave unknown (its client, the TypeScript
// SDK 1.x's among others, would never open another). A record that cannot
// be written leaves the session served by this process only, as one with
// no store.
func (s *Server) opened(ctx context.Context, req mcp.Request, res mcp.Result, err error) {
	ss, _ := streamableSession(ctx, req)
	if ss == nil {
		return
	}
	st := s.sessionFor(ss)
	if err != nil {
		if ss.InitializeParams() == nil {
			s.uncount(st) // the SDK closes it
		}
		return
	}
	if s.records == nil {
		return
	}
	var who *auth.Identity
	if ex := req.GetExtra(); ex != nil && s.authn != nil {
		who = s.identityOf(ctx, ex.Header)
	}
	id := ss.ID()
	hash := hashID(id)
	if _, ok := s.reviving.Load(id); ok {
		s.recorded(ss, st, hash) // taken over: its record was read
		return
	}
	ip, _ := req.GetParams().(*mcp.InitializeParams)
	ir, _ := res.(*mcp.InitializeResult)
	if ip == nil || ir == nil {
		return
	}
	sent := *ip
	sent.ProtocolVersion = ir.ProtocolVersion // what the session speaks
	b, err := json.Marshal(&sent)
	if err != nil || len(b) > maxInitRecord {
		return
	}
	rec := &store.SessionRecord{Hash: hash, Protocol: ir.ProtocolVersion, Init: b, Created: time.Now()}
	rec.Used = rec.Created
	if who != nil {
		rec.Principal, rec.Tenant = who.Principal, who.Tenant
	}
	if err := s.records.StoreSession(ctx, rec); err != nil {
		s.log.Warn("an MCP session's record was not stored: the session is served by this process only", "err", err)
		return
	}
	s.recorded(ss, st, hash)
}

// recorded notes that session ss (st) has a record, named hash: its uses
// are written to it (touchSessions), and the end of the record, on any
// instance, ends it here (EndRecorded).
func (s *Server) recorded(ss *mcp.ServerSession, st *session, hash string) {
	st.hash.Store(&hash)
	s.byHash.Store(hash, ss)
}

// forgetHash forgets that hash names ss, if it still does (not a session
// taken over again under the same id since).
func (s *Server) forgetHash(hash string, ss *mcp.ServerSession) {
	s.byHash.mu.Lock()
	if s.byHash.m[hash] == ss {
		delete(s.byHash.m, hash)
	}
	s.byHash.mu.Unlock()
}

// EndRecorded ends session hash (its id's SHA-256) here, if this process
// holds it, because its record ended on the store: its client's DELETE
// through another instance (or an operator's), or, if idle, the idle gap
// as another instance's sweep found it. The record is the truth: a client
// that ended its session, or one whose id leaked, is not answered on an
// instance that took the session over earlier and kept it in memory. A
// session used here since its last use was written, or with a call
// running, is not idle, and is kept: its record was swept before this
// instance wrote that use.
//
// The session's request ends first, with its calls, then the SDK closes
// it; meanwhile its requests are answered 404 (fastPath), as the SDK
// answers them once it has.
func (s *Server) EndRecorded(hash string, idle bool) {
	ss, ok := s.byHash.Load(hash)
	if !ok {
		return
	}
	why := "its record was deleted (its DELETE, on another instance)"
	if idle {
		if v, ok := s.sessions.Load(ss); ok && v.(*session).inUse() {
			return
		}
		why = "idle past the gap (its record swept)"
	}
	s.endRecorded(ss, hash, why)
}

// endRecorded ends session ss, named hash in the store, whose record is
// gone; why says how, for the log.
func (s *Server) endRecorded(ss *mcp.ServerSession, hash, why string) {
	sid := ss.ID()
	if _, loaded := s.ending.LoadOrStore(sid, struct{}{}); loaded {
		return
	}
	s.closing.Add(1)
	s.forgetHash(hash, ss)
	s.log.Info("MCP session ended: "+why, "session_id", SessionRef("#"+hash[:min(12, len(hash))]))
	// Its requests are answered 404 from here on (ended). The end of its
	// request (a write to the store, on PostgreSQL) and the SDK's close,
	// which waits for the session's handlers to return, are not the
	// caller's to wait for: it is the goroutine that hears every
	// instance's signals, stops included.
	go func() {
		s.endSession(ss)
		ss.Close()
		s.endSession(ss) // the state a call on its way made again
		s.ending.Delete(sid)
		s.closing.Add(-1)
	}()
}

// ended reports whether session sid is being ended by endRecorded: the
// SDK still has it, and would answer its requests.
func (s *Server) ended(sid string) bool {
	if s.closing.Load() == 0 {
		return false
	}
	_, ok := s.ending.Load(sid)
	return ok
}

// RecheckRecorded ends the sessions held here whose record is gone from
// the store (or idle past the gap): what EndRecorded would have ended had
// this instance heard each end, called when it listens again after it
// was cut off.
func (s *Server) RecheckRecorded(ctx context.Context) {
	if s.records == nil {
		return
	}
	type held struct {
		ss   *mcp.ServerSession
		hash string
	}
	var all []held
	s.sessions.Range(func(k, v any) bool {
		ss, ok := k.(*mcp.ServerSession)
		st := v.(*session)
		if h := st.hash.Load(); ok && h != nil {
			all = append(all, held{ss, *h})
		}
		return true
	})
	for _, h := range all {
		rec, err := s.records.GetSession(ctx, h.hash)
		switch {
		case errors.Is(err, store.ErrNotFound):
			s.endRecorded(h.ss, h.hash, "its record ended while this instance did not listen")
		case err != nil:
			s.log.Warn("reading an MCP session's record", "err", err)
			return
		case time.Since(rec.Used) >= s.idleAfter:
			if v, ok := s.sessions.Load(h.ss); !ok || !v.(*session).inUse() {
				s.endRecorded(h.ss, h.hash, "idle past the gap")
			}
		}
	}
}

// takeOver answers a request naming session sid, which the SDK does not
// know, when the store has its record: from who opened it, the session is
// made again under sid and the request goes on (it reports true); from
// anyone else, 403 (answered, false), as for a session of this process.
// A record past the idle gap, or none, leaves the request to the SDK's
// 404 (true); one that cannot be read is answered 503 (false). A DELETE
// of a recorded session deletes its record and is answered 204.
func (s *Server) takeOver(sdk http.Handler, w http.ResponseWriter, r *http.Request, sid string) bool {
	hash := hashID(sid)
	rec, err := s.records.GetSession(r.Context(), hash)
	if err != nil {
		return !s.unreadable(w, r, err)
	}
	if time.Since(rec.Used) >= s.idleAfter {
		// Ended by the idle gap, wherever it was open: it does not come
		// back. (Its last use is written up to a sweep, a tenth of the
		// gap, after the fact; the SDK ends an idle session a minute
		// after the gap.)
		return true
	}
	owner, ok := s.ownerOf(r)
	if !ok {
		return true
	}
	recOwner := ""
	if rec.Principal != "" || rec.Tenant != "" {
		recOwner = sessionOwner(&auth.Identity{Principal: rec.Principal, Tenant: rec.Tenant})
	}
	if owner != recOwner {
		if s.authn != nil && recOwner != "" {
			notYourSession(w)
			return false
		}
		return true // opened with auth on and served now without, or the other way round
	}
	if r.Method == http.MethodDelete {
		// Not while a call of the session takes it over: after that, the
		// session is this process's, and its DELETE the SDK's.
		s.reviveMu.Lock()
		defer s.reviveMu.Unlock()
		if s.sessionByID(sid) != nil {
			return true
		}
		if err := s.records.DeleteSession(r.Context(), hash); err != nil {
			http.Error(w, "deleting the session failed; try again", http.StatusServiceUnavailable)
			return false
		}
		crashpoint.Reached("session.deleted")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	if s.atCap(owner) {
		var msg mcpwire.Message
		if r.Body != nil {
			buf := mcpwire.GetBuffer()
			defer mcpwire.PutBuffer(buf)
			if body, m, ok := mcpwire.ReadMessage(w, r, buf); body == nil {
				return false // answered
			} else if ok {
				msg = m
			}
		}
		s.tooManySessions(w, msg.ID)
		return false
	}
	s.reviveMu.Lock()
	defer s.reviveMu.Unlock()
	if s.sessionByID(sid) != nil {
		return true // another request of the client took it over meanwhile
	}
	// Read again: a DELETE of the session (or its idle gap's sweep) since
	// the read above ends it for good.
	if rec, err = s.records.GetSession(r.Context(), hash); err != nil {
		return !s.unreadable(w, r, err)
	}
	var params mcp.InitializeParams
	if err := json.Unmarshal(rec.Init, &params); err != nil {
		// Not taken over: its client is told the session is unknown and
		// opens a new one; the record stays as it is.
		s.log.Warn("a stored row could not be read (a disk error, a hand edit, a partial restore): it is kept in the store as it is; "+
			"inspect the row in its table, then fix or delete it by hand", "table", "sessions", "key", hash,
			"err", "its initialize params: "+err.Error(), "reach_did", "the session is not taken over: its client opens a new one")
		return true
	}
	s.revivals.Add(1)
	defer s.revivals.Add(-1)
	s.reviving.Store(sid, true)
	defer s.reviving.Delete(sid)
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": resumeID, "method": "initialize", "params": &params})
	post := newPost(r, init, "")
	s.serveNew(sdk, discard{}, post, sid)
	ss := s.sessionByID(sid)
	if ss == nil || ss.InitializeParams() == nil {
		s.log.Warn("an MCP session could not be taken over", "session_id", SessionRef("#"+hash[:12]))
		return true
	}
	sdk.ServeHTTP(discard{}, newPost(r, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), sid, rec.Protocol))
	// Read once more, now that the end of the record finds the session
	// here (EndRecorded): a DELETE on another instance (or a sweep) since
	// the read above woke this one before the session was made, and
	// found nothing to end.
	if _, err := s.records.GetSession(r.Context(), hash); errors.Is(err, store.ErrNotFound) {
		s.endRecorded(ss, hash, "its record ended while it was taken over")
		http.Error(w, "session not found", http.StatusNotFound)
		return false
	}
	s.log.Info("MCP session taken over from the store", "session_id", SessionRef("#"+hash[:12]), "opened", rec.Created, "last_request", rec.Request)
	return true
}

// unreadable answers a request whose session's record could not be read
// (err, not ErrNotFound) with 503 and reports true: the session may well
// be there, and the SDK's 404 would tell its client it is gone for good
// (the TypeScript SDK 1.x never recovers from it). False for a record
// that is not there, or a request whose client went away.
func (s *Server) unreadable(w http.ResponseWriter, r *http.Request, err error) bool {
	if errors.Is(err, store.ErrNotFound) || r.Context().Err() != nil {
		return false
	}
	s.log.Warn("reading an MCP session's record", "err", err)
	httpjson.WriteError(w, http.StatusServiceUnavailable, "store_unavailable",
		"The session's record could not be read from the store; the session is not lost.", "Send the request again in a moment, with the same Mcp-Session-Id.")
	return true
}

// awaitTakeOver returns session sid (ss, as the SDK's sessions list it)
// once no take-over is initializing it: the SDK lists a session from
// before it registers its id and initializes it, and takeOver holds
// reviveMu until both are done.
func (s *Server) awaitTakeOver(sid string, ss *mcp.ServerSession) *mcp.ServerSession {
	if _, ok := s.reviving.Load(sid); !ok {
		return ss
	}
	s.reviveMu.Lock()
	s.reviveMu.Unlock()
	return s.sessionByID(sid)
}

// newPost is a POST of body to /mcp made from r (its context, who sent
// it), on session sid ("" for none) and protocol version proto.
func newPost(r *http.Request, body []byte, sid string, proto ...string) *http.Request {
	post := r.Clone(r.Context())
	post.Method = http.MethodPost
	post.Body = io.NopCloser(strings.NewReader(string(body)))
	post.ContentLength = int64(len(body))
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set("Accept", "application/json, text/event-stream")
	post.Header.Del(mcpwire.HeaderSession)
	post.Header.Del(mcpwire.HeaderProtocol)
	post.Header.Del("Last-Event-Id")
	if sid != "" {
		post.Header.Set(mcpwire.HeaderSession, sid)
	}
	if len(proto) > 0 && proto[0] != "" {
		post.Header.Set(mcpwire.HeaderProtocol, proto[0])
	}
	return post
}

// touchSessions writes the uses of the recorded sessions since the last
// sweep, and deletes the records idle past the gap. The sweep calls it.
func (s *Server) touchSessions(open []*mcp.ServerSession) {
	if s.records == nil {
		return
	}
	ctx := context.Background()
	var uses []store.SessionUse
	for _, ss := range open {
		v, ok := s.sessions.Load(ss)
		if !ok {
			continue
		}
		st := v.(*session)
		h := st.hash.Load()
		if h == nil || !st.used.CompareAndSwap(true, false) && st.calls.Load() == 0 {
			continue // not used since the last sweep, and no call runs
		}
		uses = append(uses, store.SessionUse{Hash: *h, Request: s.owned.Request(&st.Session)})
	}
	now := time.Now()
	if err := s.records.TouchSessions(ctx, now, uses); err != nil {
		s.log.Warn("recording the use of MCP sessions", "err", err)
	}
	if s.lastSweep.Load()+int64(time.Minute) < now.UnixNano() || s.idleAfter < time.Minute {
		s.lastSweep.Store(now.UnixNano())
		if _, err := s.records.SweepSessions(ctx, now.Add(-s.idleAfter)); err != nil {
			s.log.Warn("deleting the records of idle MCP sessions", "err", err)
		}
	}
}

// use notes that st's session was used: one load on each call, a store
// only on the first since the last sweep.
func (st *session) use() {
	if !st.used.Load() {
		st.used.Store(true)
	}
}

// inUse reports whether st's session was used since the sweep last wrote
// its use, or has a call running.
func (st *session) inUse() bool { return st.used.Load() || st.calls.Load() > 0 }

// sessionsInStateless reports whether the go-sdk's compatibility setting
// allowsessionsinstateless=1 is in v, the value of MCPGODEBUG (key=value
// pairs separated by commas; the last of a key counts, as the SDK reads it).
func sessionsInStateless(v string) bool {
	on := false
	for kv := range strings.SplitSeq(v, ",") {
		if k, val, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == "allowsessionsinstateless" {
			on = strings.TrimSpace(val) == "1"
		}
	}
	return on
}
