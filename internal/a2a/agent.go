package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/forwarded"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/redact"
)

// maxCardBytes bounds an agent card the gateway reads.
const maxCardBytes = 1 << 20

// agent is one upstream agent: its card, a client for it, and the JSON-RPC
// handlers that serve it at /a2a/NAME.
type agent struct {
	g   *Gateway
	cfg Agent
	rpc http.Handler // version dispatch over the 1.0 and 0.3 handlers

	mu     sync.Mutex
	card   *a2a.AgentCard // the agent's own card
	client *a2aclient.Client
	proto  a2a.ProtocolVersion // what the client speaks to it
	err    error               // the last failure to fetch or use the card
	tried  time.Time           // when the card was last asked for
	// refreshing is set while the card is fetched again (Options.CardTTL).
	refreshing atomic.Bool
}

func newAgent(g *Gateway, cfg Agent) *agent {
	a := &agent{g: g, cfg: cfg}
	ep := &endpoint{g: g, a: a}
	opts := []a2asrv.TransportOption{
		a2asrv.WithTransportKeepAlive(15 * time.Second),
		a2asrv.WithTransportPanicHandler(func(p any) error {
			g.log.Error("a2a: panic serving a request", "agent", cfg.Name, "panic", p)
			return a2a.ErrInternalError
		}),
	}
	a.rpc = byVersion(a2asrv.NewJSONRPCHandler(ep, opts...), a2av0.NewJSONRPCHandler(ep, opts...))
	return a
}

// ready returns the client for the agent, fetching its card first if it
// has not been (at most once a second while it fails).
func (a *agent) ready(ctx context.Context) (*a2aclient.Client, *a2a.AgentCard, error) {
	a.mu.Lock()
	c, card, err, tried := a.client, a.card, a.err, a.tried
	a.mu.Unlock()
	if c != nil {
		if time.Since(tried) > a.g.opts.CardTTL && a.refreshing.CompareAndSwap(false, true) {
			// The agent may have changed its card (its skills, whether it
			// streams, its interface): fetched again in the background,
			// this request served with the one reach has.
			a.g.background(func() {
				defer a.refreshing.Store(false)
				a.resolve(a.g.base)
			})
		}
		return c, card, nil
	}
	if err != nil && time.Since(tried) < time.Second {
		return nil, nil, err
	}
	if err := a.resolve(ctx); err != nil {
		return nil, nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.client, a.card, nil
}

// resolve fetches the agent's card and makes a client for it.
func (a *agent) resolve(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	card, err := a.fetchCard(ctx)
	if err == nil {
		a.mu.Lock()
		same := a.client != nil && sameCard(a.card, card)
		var to string
		if !same && a.client != nil {
			to = a.moved(a.card, card)
		}
		if same || to != "" {
			a.tried = time.Now()
		}
		a.mu.Unlock()
		if to != "" {
			// The card reach follows sends JSON-RPC where the agent's
			// first card and its configured URL did not: the callers'
			// messages would go to another host on the agent's word
			// alone. The card reach has stands until the operator
			// restarts reach (or points the agent's url there).
			a.g.log.Warn("a2a: agent card not refreshed: it moved the agent's JSON-RPC interface to another origin; reach keeps the card it has (restart reach, or set the agent's url, to follow it)",
				"agent", a.cfg.Name, "to", a.g.shown(shownURL(to)))
			return nil
		}
		if same {
			// A refresh that found the card as it was: the client stands
			// (a new one each CardTTL would never be destroyed, since
			// tasks in flight may hold the one replaced).
			return nil
		}
	}
	var c *a2aclient.Client
	var proto a2a.ProtocolVersion
	if err == nil {
		hc := a.g.opts.HTTPClient
		c, err = a2aclient.NewFromCard(ctx, card,
			a2aclient.WithJSONRPCTransport(hc),
			a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}))
		if err != nil {
			err = fmt.Errorf("agent %s: its card offers no interface reach can use (JSON-RPC, A2A 1.0 or 0.3): %w", a.cfg.Name, err)
		} else {
			proto = pickVersion(card)
		}
	}
	if err != nil {
		// Callers read it (GET /v1/agents, the card's error, a failed
		// task's message): the agent's key may be in what the SDK quotes
		// of its card (an interface's URL).
		err = &shownError{err, a.g.shown(err.Error())}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tried = time.Now()
	if err != nil {
		if a.client != nil {
			// A refresh that failed: the agent may be restarting; the card
			// reach has stands until a fetch succeeds.
			a.g.log.Warn("a2a: agent card not refreshed", "agent", a.cfg.Name, "err", err)
			return nil
		}
		a.err = err
		a.g.log.Warn("a2a: agent card not available", "agent", a.cfg.Name, "err", err)
		return err
	}
	// The client replaced, not destroyed: tasks in flight hold the old one
	// (their streams and cancels go on through it).
	a.card, a.client, a.proto, a.err = card, c, proto, nil
	return nil
}

// moved is the URL of a JSON-RPC interface of card at an origin (scheme
// and host) neither the agent's configured URL nor any JSON-RPC interface
// of the card reach has (old) is at, or "".
func (a *agent) moved(old, card *a2a.AgentCard) string {
	origin := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return s
		}
		return strings.ToLower(u.Scheme + "://" + u.Host)
	}
	known := map[string]bool{origin(a.cfg.URL): true}
	for _, i := range old.SupportedInterfaces {
		if i != nil && i.ProtocolBinding == a2a.TransportProtocolJSONRPC {
			known[origin(i.URL)] = true
		}
	}
	for _, i := range card.SupportedInterfaces {
		if i != nil && i.ProtocolBinding == a2a.TransportProtocolJSONRPC && !known[origin(i.URL)] {
			return i.URL
		}
	}
	return ""
}

// sameCard reports whether two cards an agent served say the same.
func sameCard(a, b *a2a.AgentCard) bool {
	if a == nil || b == nil {
		return a == b
	}
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	return err == nil && bytes.Equal(ja, jb)
}

// pickVersion is the protocol version the SDK's client chooses from a card:
// the newest JSON-RPC one.
func pickVersion(card *a2a.AgentCard) a2a.ProtocolVersion {
	v := a2a.ProtocolVersion("")
	for _, i := range card.SupportedInterfaces {
		if i.ProtocolBinding == a2a.TransportProtocolJSONRPC && (v == "" || i.ProtocolVersion == a2a.Version) {
			v = i.ProtocolVersion
		}
	}
	return v
}

// fetchCard reads the agent's card (1.0 or 0.3), at most maxCardBytes.
func (a *agent) fetchCard(ctx context.Context) (*a2a.AgentCard, error) {
	u, err := url.JoinPath(a.cfg.URL, a2asrv.WellKnownAgentCardPath)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", a.cfg.Name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", a.cfg.Name, err)
	}
	resp, err := a.g.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, &unreachable{fmt.Errorf("agent %s does not answer at %s: %w", a.cfg.Name, shownURL(u), errors.Unwrap(err))}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &unreachable{fmt.Errorf("agent %s: GET %s answered %s", a.cfg.Name, shownURL(u), resp.Status)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCardBytes+1))
	if err != nil {
		return nil, fmt.Errorf("agent %s: reading its card: %w", a.cfg.Name, err)
	}
	if len(b) > maxCardBytes {
		return nil, fmt.Errorf("agent %s: its card is larger than %d bytes", a.cfg.Name, maxCardBytes)
	}
	card, err := a2av0.NewAgentCardParser()(b)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %s is not an agent card: %w", a.cfg.Name, shownURL(u), err)
	}
	if !slices.ContainsFunc(card.SupportedInterfaces, func(i *a2a.AgentInterface) bool {
		return i != nil && i.ProtocolBinding == a2a.TransportProtocolJSONRPC
	}) {
		return nil, fmt.Errorf("agent %s: its card offers no JSON-RPC interface (reach speaks A2A over JSON-RPC)", a.cfg.Name)
	}
	return card, nil
}

// shownError is an error as callers are shown it: masked.
type shownError struct {
	err  error
	text string
}

func (e *shownError) Error() string { return e.text }
func (e *shownError) Unwrap() error { return e.err }

// unreachable is a card that could not be fetched: the agent did not answer,
// or not with 200. It may be up later.
type unreachable struct{ err error }

func (e *unreachable) Error() string { return e.err.Error() }
func (e *unreachable) Unwrap() error { return e.err }

// check fetches and checks the card for `reach validate`.
func (a *agent) check(ctx context.Context) (warnings []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	card, err := a.fetchCard(ctx)
	if _, ok := errors.AsType[*unreachable](err); ok {
		return []string{err.Error() + " (reach asks again when a message needs it)"}, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(a.g.opts.HTTPClient),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: a.g.opts.HTTPClient})); err != nil {
		return nil, fmt.Errorf("agent %s: its card offers no interface reach can use: %w", a.cfg.Name, err)
	}
	base, _ := url.Parse(a.cfg.URL)
	for _, i := range card.SupportedInterfaces {
		if i == nil || i.ProtocolBinding != a2a.TransportProtocolJSONRPC {
			continue
		}
		if u, err := url.Parse(i.URL); err == nil && (u.Scheme != base.Scheme || u.Host != base.Host) {
			warnings = append(warnings, fmt.Sprintf("agent %s: its card sends JSON-RPC to %s, not to the configured %s; reach follows the card", a.cfg.Name, shownURL(i.URL), shownURL(a.cfg.URL)))
		}
	}
	if !card.Capabilities.Streaming {
		warnings = append(warnings, fmt.Sprintf("agent %s: its card says it does not stream; reach polls its tasks, so a cancel reaches it only once it has answered the first message", a.cfg.Name))
	}
	return warnings, nil
}

// shown is a text of an agent's card as reach shows it: masked.
func (g *Gateway) shown(s string) string {
	if g.opts.Redactor == nil {
		return s
	}
	return g.opts.Redactor.RedactString(s)
}

// shownURL is how an agent's URL is quoted (errors, warnings, GET
// /v1/agents, the model's refusals): its query, which may hold its key
// (?key=...), as "?…", its user information as "xxxxx", no fragment.
func shownURL(s string) string { return redact.ShownURL(s) }

func (a *agent) status(ctx context.Context, counted func(Owner) bool) Status {
	s := Status{Name: a.cfg.Name, URL: shownURL(a.cfg.URL), Path: "/a2a/" + a.cfg.Name, Reentrancy: string(a.cfg.Reentrancy),
		Key: a.cfg.Key, Budget: budgetView(a.cfg.Budget), LiveTasks: a.g.tasks.live(a.cfg.Name, counted)}
	if s.Reentrancy == "" {
		s.Reentrancy = "non_reentrant"
	}
	_, card, err := a.ready(ctx)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	s.Card, s.CardName, s.Description, s.Streaming = true, a.g.shown(card.Name), a.g.shown(card.Description), card.Capabilities.Streaming
	for _, sk := range card.Skills {
		s.Skills = append(s.Skills, a.g.shown(sk.Name))
	}
	a.mu.Lock()
	s.Protocol = string(a.proto)
	a.mu.Unlock()
	return s
}

// serveCard serves the agent's card with its interfaces rewritten to the
// gateway's URL, in the 1.0 and 0.3 shapes at once.
func (a *agent) serveCard(w http.ResponseWriter, r *http.Request) {
	_, card, err := a.ready(r.Context())
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]any{"error": map[string]string{"code": "agent_unreachable",
			"message": err.Error() + ".", "suggestion": "Start the agent, or check agents[].url; reach asks again on the next request."}})
		return
	}
	public, fromHost := a.public(r)
	if public == "" {
		writeJSON(w, http.StatusMisdirectedRequest, map[string]any{"error": map[string]string{"code": "host_not_allowed",
			"message":    fmt.Sprintf("The card's URL is built from the request's Host, and %q is neither the address this request came in at nor a name the gateway is configured to be reached at.", r.Host),
			"suggestion": "Have the operator set a2a.public_url to the address clients reach the gateway at (or list the name in a2a.hosts): behind a proxy, a port mapping or in a container, the gateway cannot tell it. Without them, ask at the gateway's own address (127.0.0.1 or localhost and the port it listens on)."}})
		return
	}
	if fromHost {
		// The card names the Host it was asked at: a shared cache must not
		// give it to a client that asked at another.
		w.Header().Set("Cache-Control", "no-store")
	}
	out := rewriteCard(card, public)
	b, err := a2av0.NewStaticAgentCardProducer(out).(a2asrv.AgentCardJSONProducer).CardJSON(r.Context())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]string{"code": "bad_card", "message": err.Error()}})
		return
	}
	if r := a.g.opts.Redactor; r != nil {
		// The card is the agent's words: it may quote the address it was
		// asked at, key and all. (The card reach's client follows keeps
		// it: its interfaces may need it.)
		b = r.Values(b)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// public is the URL a caller reaches the agent at through the gateway:
// at Options.PublicURL, else at the request's Host if hostAllowed (fromHost
// then), else "".
func (a *agent) public(r *http.Request) (u string, fromHost bool) {
	base := a.g.opts.PublicURL
	if base == "" {
		if !a.g.hostAllowed(r) {
			return "", false
		}
		scheme := "http"
		if forwarded.HTTPS(r) {
			scheme = "https"
		}
		base, fromHost = scheme+"://"+r.Host, true
	}
	return base + "/a2a/" + a.cfg.Name, fromHost
}

// hostAllowed reports whether a card may name r's Host: one of
// Options.Hosts, or the address r came in at (its IP, or a loopback name
// when that is a loopback address), at its port. A Host a client picks
// freely (another port, another name) is not: behind a shared cache its
// card would be the one the next client gets.
func (g *Gateway) hostAllowed(r *http.Request) bool {
	host := strings.ToLower(r.Host)
	def := "80" // the port of a name without one: the scheme's the card will name
	if r.TLS != nil || forwarded.HTTPS(r) {
		def = "443"
	}
	if slices.ContainsFunc(g.opts.Hosts, func(h string) bool { return withPort(h, def) == withPort(host, def) }) {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	lhost, lport, err := net.SplitHostPort(local.String())
	if err != nil {
		return false
	}
	h, port, err := net.SplitHostPort(host)
	if err != nil { // no port: the scheme's
		h, port = host, "80"
		if r.TLS != nil {
			port = "443"
		}
	}
	if port != lport {
		return false
	}
	at, err := netip.ParseAddr(lhost)
	if err != nil {
		return false
	}
	at = at.Unmap()
	if h == "localhost" {
		return at.IsLoopback()
	}
	ip, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && ip.Zone() == "" && (ip.Unmap() == at || (ip.IsLoopback() && at.IsLoopback()))
}

// withPort is host with port def when it names none, so that a name listed
// with its scheme's port and one asked without it (or the other way round)
// are one, and a name with the other scheme's port is another.
func withPort(host, def string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), def)
}

// rewriteCard is the agent's card as the gateway serves it: JSON-RPC 1.0
// and 0.3 at public, no push notifications or extended card (the gateway
// does not relay them), no signatures (the card is no longer the agent's
// own words), the agent's own security schemes dropped (the caller
// authenticates to reach, which holds the connection to the agent), and
// reach's linking extension added.
func rewriteCard(up *a2a.AgentCard, public string) *a2a.AgentCard {
	c := *up
	c.SupportedInterfaces = []*a2a.AgentInterface{
		{URL: public, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
		{URL: public, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
	}
	c.Capabilities.PushNotifications = false
	c.Capabilities.ExtendedAgentCard = false
	c.Capabilities.Extensions = append(slices.DeleteFunc(slices.Clone(up.Capabilities.Extensions), func(e a2a.AgentExtension) bool {
		return e.URI == Extension
	}), a2a.AgentExtension{URI: Extension, Required: false,
		Description: "reach links delegations across agents: it adds reach/request and reach/parent to the metadata of every message it forwards, and the headers traceparent and baggage (reach.request); an agent that passes either on with its own messages, tool calls and model calls is linked exactly. A message that names no request may name the budget of the one reach begins for it in its metadata (reach/budget: a budget's name or amounts), and its priority (reach/priority: a whole number, which lowers the caller's, never raises it). Activate it to get reach/request and reach/frame back in the task's metadata.",
		Params: map[string]any{"metadata": []any{MetaRequest, MetaParent}, "headers": []any{"traceparent", "baggage"}, "baggage_key": "reach.request", "budget_metadata": MetaBudget, "priority_metadata": MetaPriority,
			"task_metadata": []any{MetaRequest, MetaFrame}}})
	c.Signatures = nil
	c.SecuritySchemes = nil
	c.SecurityRequirements = nil
	return &c
}

// serveRPC bounds the body and passes the request to the handler of its
// protocol version.
func (a *agent) serveRPC(w http.ResponseWriter, r *http.Request) {
	limit := a.g.opts.MaxBodyBytes
	if r.ContentLength > limit {
		writeRPCError(w, nil, -32600, fmt.Sprintf("The request body is %d bytes; reach takes at most %d. Send a smaller message (files by URL).", r.ContentLength, limit))
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body.Close()
	if err != nil {
		writeRPCError(w, nil, -32700, "The request body could not be read: "+err.Error()+".")
		return
	}
	if int64(len(b)) > limit {
		writeRPCError(w, nil, -32600, fmt.Sprintf("The request body is larger than %d bytes. Send a smaller message (files by URL).", limit))
		return
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		// The SDK answers a batch as invalid params of one request.
		writeRPCError(w, nil, -32600, "reach takes one JSON-RPC request per POST, not a batch. Send each request on its own.")
		return
	}
	if id, ok := answerableID(b); !ok {
		writeRPCError(w, id, -32600, "reach cannot answer this request under its id, so it did not run it: an id must be there, not null, and a number id "+
			"an integer of at most 2^53 (the id is read as a 64-bit float). Send it again with a string id or such an integer.")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	// The caller's credentials are for reach (its API key in X-Reach-Key
	// too): drop them before the SDK sees the headers, so no path can pass
	// them to an agent.
	auth.StripCredentials(r.Header)
	if requested(r.Header, Extension) {
		if version(r, b) == string(a2av0.Version) {
			w.Header().Set("X-A2A-Extensions", Extension)
		} else {
			w.Header().Set(a2a.SvcParamExtensions, Extension)
		}
	}
	r.Header.Set(a2a.SvcParamVersion, version(r, b))
	a.rpc.ServeHTTP(w, r)
}

// answerableID reports whether the request body b has an id the SDK
// answers with as it was sent, and returns the id. The SDK runs a request
// without an id, or with a null one, and answers it under null; it reads a
// number id as a float64, so an integer past 2^53 comes back as another
// (1234567890123456789 as 1234567890123456800). Either way the client
// cannot match the answer to its message, which started a hand-off all the
// same. A body that is not one JSON object is the SDK's to refuse.
func answerableID(b []byte) (json.RawMessage, bool) {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(b, &m) != nil {
		return nil, true
	}
	id := m.ID
	switch {
	case len(id) == 0 || string(id) == "null":
		return nil, false
	case id[0] != '-' && (id[0] < '0' || id[0] > '9'):
		return id, true
	}
	var n big.Int
	if _, ok := n.SetString(string(id), 10); !ok {
		return id, true // a fraction or an exponent: the float64 the SDK reads answers as the same number
	}
	return id, !mcpwire.PastFloat(&n)
}

// requested reports whether the caller activated the extension uri.
func requested(h http.Header, uri string) bool {
	for _, k := range []string{a2a.SvcParamExtensions, "X-A2A-Extensions"} {
		for _, v := range h.Values(k) {
			for u := range strings.SplitSeq(v, ",") {
				if strings.TrimSpace(u) == uri {
					return true
				}
			}
		}
	}
	return false
}

// version is the request's A2A protocol version: the A2A-Version header
// or query parameter; without either, 0.3 as the spec says, unless the
// method is a 1.0 name (no '/'), which a 0.3 handler would not know.
func version(r *http.Request, body []byte) string {
	v := r.Header.Get(a2a.SvcParamVersion)
	if v == "" {
		v = r.URL.Query().Get(a2a.SvcParamVersion)
	}
	if v != "" {
		return v
	}
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &m) == nil && m.Method != "" && !strings.Contains(m.Method, "/") {
		return string(a2a.Version)
	}
	return string(a2av0.Version)
}

// byVersion dispatches on the A2A-Version header (set by serveRPC).
func byVersion(v1, v03 http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch v := r.Header.Get(a2a.SvcParamVersion); v {
		case string(a2a.Version), "1":
			v1.ServeHTTP(w, r)
		case string(a2av0.Version):
			v03.ServeHTTP(w, r)
		default:
			writeRPCError(w, nil, -32009, fmt.Sprintf("A2A-Version %q is not supported here; send A2A-Version: 1.0 (or 0.3).", v))
		}
	})
}

func writeRPCError(w http.ResponseWriter, id any, code int, msg string) {
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
