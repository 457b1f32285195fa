package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// inFlight bounds the requests one authenticated principal (of one tenant)
// has in flight at once, streams included. Each holds a connection of its
// own (HTTP/1.1) for as long as it lasts: without a bound, one principal's
// client could open connections, sessions' streams and calls until the
// gateway ran out of descriptors and refused everyone else's.
type inFlight struct {
	max int // 0: no bound
	mu  sync.Mutex
	n   map[string]int
}

// key is whose a request is: "" for no identity (not bounded here).
func inFlightKey(id *auth.Identity) string {
	if id == nil {
		return ""
	}
	return id.Tenant + "\x00" + id.Principal
}

// take counts a request of key in, reporting false (and counting nothing)
// when the principal already has max in flight.
func (f *inFlight) take(key string) bool {
	if f == nil || f.max <= 0 || key == "" {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[key] >= f.max {
		return false
	}
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[key]++
	return true
}

// done counts out a request take let in.
func (f *inFlight) done(key string) {
	if f == nil || f.max <= 0 || key == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[key]--; f.n[key] <= 0 {
		delete(f.n, key)
	}
}

// bound wraps a handler that runs after authentication: a request of a
// principal past its bound is refused 429.
func (f *inFlight) bound(next http.Handler) http.Handler {
	if f == nil || f.max <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := auth.IdentityFrom(r.Context())
		key := inFlightKey(id)
		if !f.take(key) {
			f.refuse(w, r)
			return
		}
		defer f.done(key)
		next.ServeHTTP(w, r)
	})
}

// refuse answers a request past its principal's bound: 429, a JSON-RPC
// error where the path speaks JSON-RPC (MCP, A2A), the API's error
// elsewhere (the model routes' clients read its message too).
func (f *inFlight) refuse(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("Too many requests in flight: this principal has %d at once (calls, streams and sessions' streams, each on a connection of its own), the most it may (requests_per_principal).", f.max)
	next := "Wait for some to end, close the streams and connections you no longer use, and reuse connections (keep-alive) rather than open new ones; then send this again."
	w.Header().Set("Retry-After", "1")
	if p := r.URL.Path; p == "/mcp" || p == "/sse" || strings.HasPrefix(p, "/a2a/") {
		buf := mcpwire.GetBuffer()
		defer mcpwire.PutBuffer(buf)
		mcpwire.AppendResponse(buf, json.RawMessage("null"), nil, &jsonrpc.Error{Code: codeTooManyInFlight, Message: msg + " " + next})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write(buf.Bytes())
		return
	}
	httpjson.WriteError(w, http.StatusTooManyRequests, "too_many_in_flight", msg, next)
}

// codeTooManyInFlight is the JSON-RPC error code of a request past its
// principal's bound, in the implementation-defined server error range.
const codeTooManyInFlight = -32029
