package front

import (
	"bytes"
	"context"
	"net/http"
	"sync"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP+SSE transport of protocol 2024-11-05, which reach offers:
// clients pinned to it (the TypeScript SDK 1.x's SSEClientTransport, an
// agent's "type": "sse") GET /sse for their session's stream and POST to
// the URL its first event names. A session there is one request, as on
// /mcp. Its messages come without their HTTP requests (the SDK queues the
// POSTs' bodies for the stream's session), so a call is placed by its
// _meta, and the session's owner is who opened the stream.

// SSEPath is where the HTTP+SSE transport is served; Handler serves it.
const SSEPath = "/sse"

func (s *Server) sseHandler() http.Handler {
	sdk := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.SSEOptions{
		MaxRequestBodyBytes: s.bodyLimit,
	})
	return s.ownSSESessions(s.endSSEOnClose(sdk))
}

// sseStreamKey keys the sseStream of a GET /sse in its context, which the
// messages of its session are handled in.
type sseStreamKey struct{}

// sseStream is the session a GET /sse opened, once its client initialized.
type sseStream struct {
	mu sync.Mutex
	ss *mcp.ServerSession
}

func (st *sseStream) opened(s mcp.Session) {
	if ss, ok := s.(*mcp.ServerSession); ok {
		st.mu.Lock()
		st.ss = ss
		st.mu.Unlock()
	}
}

// endSSEOnClose ends a stream's session, and its request with the calls
// still running in it, as soon as the stream closes: the client is gone
// (its process ended, the network dropped), and the stream was the only
// way it could still say so. The SDK's close of the session, which runs
// when the stream ends, waits for those calls instead; a Streamable HTTP
// client's call ends with its POST.
func (s *Server) endSSEOnClose(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		st := &sseStream{}
		stop := context.AfterFunc(r.Context(), func() {
			st.mu.Lock()
			ss := st.ss
			st.mu.Unlock()
			if ss != nil {
				s.endSession(ss)
			}
		})
		defer stop()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sseStreamKey{}, st)))
	})
}

// ownSSESessions ties each HTTP+SSE session to who opened its stream, as
// bindSessions does on /mcp: the SDK's SSE handler knows no owners, and
// would take another principal's POST to a session whose id it learned.
// The id is the one in the endpoint event the SDK writes first.
func (s *Server) ownSSESessions(next http.Handler) http.Handler {
	if s.authn == nil {
		return next
	}
	var owners sync.Map // session id -> sessionOwner of its GET
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := auth.IdentityFrom(r.Context())
		if !ok {
			httpjson.WriteError(w, http.StatusUnauthorized, "unauthenticated", "This endpoint needs credentials.",
				"Send an API key (Authorization: Bearer rk_... or X-Reach-Key: rk_...) or a bearer JWT from the configured issuer.")
			return
		}
		if r.Method != http.MethodGet {
			if o, ok := owners.Load(r.URL.Query().Get("sessionid")); ok && o.(string) != sessionOwner(id) {
				notYourSession(w)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		sw := &sseSessionWriter{ResponseWriter: w, owner: sessionOwner(id), owners: &owners}
		defer func() {
			if sw.id != "" {
				owners.Delete(sw.id)
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// sseSessionWriter records the session id of the endpoint event, the first
// the SDK writes on an SSE stream, with its owner.
type sseSessionWriter struct {
	http.ResponseWriter
	owner  string
	owners *sync.Map
	id     string
}

func (w *sseSessionWriter) Write(p []byte) (int, error) {
	if w.id == "" {
		if _, rest, ok := bytes.Cut(p, []byte("sessionid=")); ok {
			end := bytes.IndexAny(rest, "&\r\n")
			if end < 0 {
				end = len(rest)
			}
			w.id = string(rest[:end])
			w.owners.Store(w.id, w.owner)
		}
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes on to the stream, which the SDK flushes after each event.
func (w *sseSessionWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the stream.
func (w *sseSessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
