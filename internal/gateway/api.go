package gateway

import (
	"net/http"

	"github.com/agentreach/reach/internal/httpapi"
	"github.com/agentreach/reach/internal/modelproxy"
)

func (g *Gateway) newHandler() http.Handler {
	return httpapi.New(&httpapi.Options{
		MCP: g.front.Handler(),
		Model: modelproxy.New(&modelproxy.Options{Model: g.cfg.Model, Owned: g.owned, Choices: &g.choices,
			Models: g.rt, Redactor: g.redactor, Authenticates: g.authn != nil, Logger: g.log}),
		Runtime: g.rt, Owned: g.owned, Choices: &g.choices, Authn: g.authn, Tools: g, Upstreams: g,
		Stats: g.stats, Metrics: g.metrics, Approvals: g.approvals, Store: g.store, Audit: g.audit,
		MaxBody: g.cfg.BodyLimit(), Logger: g.log,
	})
}
