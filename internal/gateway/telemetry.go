package gateway

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/telemetry"
)

// What the gateway tells its tracer and metrics about where calls go:
// which upstream serves a tool, where the model is, which upstreams are
// up, and what the requests are doing.

// serving returns the name and URL ("" for stdio) of the upstream that
// serves the tool of that name, or ok false. The catalog exists before the
// runtime and the pool: before the pool, no tool is an upstream's.
func (g *Gateway) serving(name string) (up, url string, ok bool) {
	if g.pool == nil {
		return "", "", false
	}
	t, found := g.catalog.Tool(name)
	if !found {
		return "", "", false
	}
	return g.pool.Serving(t)
}

// upstreamName returns the name of the upstream that serves the tool, or "".
func (g *Gateway) upstreamName(tool string) string {
	up, _, _ := g.serving(tool)
	return up
}

// upstreamsUp says which upstreams are connected.
func (g *Gateway) upstreamsUp() map[string]bool {
	m := map[string]bool{}
	for _, s := range g.Upstreams() {
		m[s.Name] = s.Connected
	}
	return m
}

// activeRequests counts the requests not ended by live state.
func (g *Gateway) activeRequests() map[string]int {
	m := map[string]int{}
	if g.rt == nil {
		return m
	}
	now := time.Now()
	var pending func(string) bool
	if g.approvals != nil {
		m := g.approvals.PendingRequests()
		pending = func(id string) bool { return m[id] }
	}
	for _, r := range g.rt.Requests() {
		if s := telemetry.RequestActivityPending(r, now, pending).State; s != telemetry.StateDone {
			m[s]++
		}
	}
	return m
}

// hostPort splits a URL's host and port (the scheme's default if none).
func hostPort(raw string) (string, int) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", 0
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	p, _ := strconv.Atoi(port)
	return host, p
}

// peer says where a frame's call went: a tool of an upstream to that
// server (over HTTP, or a pipe to a stdio process); a model call to the
// configured model endpoint, unless it was an upstream's sampling request,
// which goes to the client.
func (g *Gateway) peer(e *reach.Event) telemetry.Peer {
	switch e.Kind {
	case reach.ToolFrame:
		_, url, ok := g.serving(e.Name)
		if !ok {
			return telemetry.Peer{}
		}
		if url == "" {
			return telemetry.Peer{Remote: true, Transport: "pipe"}
		}
		host, port := hostPort(url)
		return telemetry.Peer{Remote: true, Address: host, Port: port}
	case reach.ModelFrame:
		if e.Parent != 0 && g.rt != nil {
			if r, ok := g.rt.Lookup(e.Request); ok {
				if p, ok := r.Frame(e.Parent); ok && p.Kind == reach.ToolFrame && g.upstreamName(p.Name) != "" {
					return telemetry.Peer{} // a sampling request, answered by the client
				}
			}
		}
		m := g.cfg.Model
		if m == nil || m.BaseURL == "" {
			return telemetry.Peer{}
		}
		host, port := hostPort(m.BaseURL)
		return telemetry.Peer{Provider: providerOf(host), Address: host, Port: port}
	}
	return telemetry.Peer{}
}

// providerOf names the GenAI provider of a model endpoint's host, as the
// semantic conventions do, or "openai" for any OpenAI-compatible endpoint
// the gateway cannot tell apart.
func providerOf(host string) string {
	switch {
	case host == "api.openai.com":
		return "openai"
	case strings.HasSuffix(host, ".openai.azure.com"):
		return "azure.ai.openai"
	case host == "api.anthropic.com":
		return "anthropic"
	case host == "api.mistral.ai":
		return "mistral_ai"
	case host == "api.groq.com":
		return "groq"
	case host == "api.deepseek.com":
		return "deepseek"
	case strings.HasSuffix(host, "generativelanguage.googleapis.com"):
		return "gcp.gemini"
	}
	return "openai" // an OpenAI-compatible server (vLLM, llama.cpp, Ollama, a proxy)
}
