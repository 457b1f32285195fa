package gateway

import (
	"net/http"
	"time"

	"github.com/agentreach/reach/internal/httpapi"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/modelproxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// byProtocol sends the MCP requests of the sessionless protocol (its
// version in the Mcp-Protocol-Version header, no session id) to stateless
// and the rest to stateful.
func byProtocol(stateless, stateful http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(headerRPCID) // the gateway's own, never a client's
		if r.Header.Get(mcpwire.HeaderSession) == "" && r.Header.Get(mcpwire.HeaderProtocol) >= mcpwire.StatelessProtocol {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

func (g *Gateway) newHandler() http.Handler {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &mcp.StreamableHTTPOptions{
		Logger:                       g.sdkLogger("mcp-http"),
		SessionTimeout:               g.cfg.IdleAfter() + time.Minute,
		MaxRequestBodyBytes:          g.cfg.BodyLimit(),
		PropagateRequestCancellation: true,
	})
	// The sessionless protocol (2026-07-28 and later) needs the SDK's
	// stateless handler; both serve the same server.
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &mcp.StreamableHTTPOptions{
		Logger:                       g.sdkLogger("mcp-http"),
		Stateless:                    true,
		MaxRequestBodyBytes:          g.cfg.BodyLimit(),
		PropagateRequestCancellation: true,
	})
	return httpapi.New(&httpapi.Options{
		MCP: g.bindSessions(byProtocol(g.leanStateless(stateless), g.leanMCP(mcpHandler))),
		Model: modelproxy.New(&modelproxy.Options{Model: g.cfg.Model, Owned: g.owned, Chosen: &g.chosen,
			Models: g.rt, Redactor: g.redactor, Authenticates: g.authn != nil, Logger: g.log}),
		Runtime: g.rt, Owned: g.owned, Chosen: &g.chosen, Authn: g.authn, Tools: g, Upstreams: g,
		Stats: g.stats, Metrics: g.metrics, Approvals: g.approvals, Store: g.store, Audit: g.audit,
		MaxBody: g.cfg.BodyLimit(), Logger: g.log,
	})
}
