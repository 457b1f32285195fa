package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/graph"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/telemetry"
	"github.com/agentreach/reach/internal/ui"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Headers that link an API call to a frame (see the package doc).
const (
	HeaderParent      = "Reach-Parent"
	HeaderScene       = "Reach-Scene" // the conversation's scene, for a new request
	HeaderTraceparent = "Traceparent"
	HeaderBaggage     = "Baggage"
)

// byProtocol sends the MCP requests of the sessionless protocol (its
// version in the Mcp-Protocol-Version header, no session id) to stateless
// and the rest to stateful.
func byProtocol(stateless, stateful http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(headerRPCID) // the gateway's own, never a client's
		if r.Header.Get(headerSession) == "" && r.Header.Get(headerProtocol) >= statelessProtocol {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

func (g *Gateway) newHandler() http.Handler {
	mux := http.NewServeMux()
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &mcp.StreamableHTTPOptions{
		Logger:                       g.sdkLogger("mcp-http"),
		SessionTimeout:               g.cfg.idleGap() + time.Minute,
		MaxRequestBodyBytes:          g.cfg.maxBody(),
		PropagateRequestCancellation: true,
	})
	// The sessionless protocol (2026-07-28 and later) needs the SDK's
	// stateless handler; both serve the same server.
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server }, &mcp.StreamableHTTPOptions{
		Logger:                       g.sdkLogger("mcp-http"),
		Stateless:                    true,
		MaxRequestBodyBytes:          g.cfg.maxBody(),
		PropagateRequestCancellation: true,
	})
	mux.Handle("/mcp", g.bindSessions(byProtocol(g.leanStateless(stateless), g.leanMCP(mcpHandler))))
	mux.HandleFunc("GET /healthz", g.healthz)
	mux.HandleFunc("GET /livez", g.livez)
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.HandleFunc("POST /v1/calls", g.postCalls)
	mux.HandleFunc("POST /v1/chat/completions", g.chatCompletions)
	mux.HandleFunc("GET /v1/tools", g.listTools)
	mux.HandleFunc("GET /v1/requests", g.listRequests)
	mux.HandleFunc("GET /v1/requests/{id}", g.getRequest)
	mux.HandleFunc("GET /v1/requests/{id}/graph", g.getGraph)
	mux.HandleFunc("POST /v1/requests/{id}/cancel", g.cancelRequest)
	mux.HandleFunc("POST /v1/requests/{id}/end", g.endRequest)
	mux.HandleFunc("GET /v1/agents", g.listAgents)
	if g.agents != nil {
		mux.Handle("/a2a/", g.agents)
	}
	g.mountOperators(mux)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusFound) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("There is nothing at %s %s.", r.Method, r.URL.Path),
			"Use /mcp (MCP), POST /v1/calls, GET /v1/tools, POST /v1/chat/completions, GET /v1/requests, GET /v1/requests/{id}[/graph], POST /v1/requests/{id}/cancel|end, GET /v1/agents, /a2a/NAME (A2A), /v1/approvals, /v1/deadletters, GET /v1/audit[/verify], GET /v1/stats, /ui/, /metrics or GET /healthz.")
	})
	var h http.Handler = mux
	if g.authn != nil {
		h = g.authn.Middleware(h) // every path but /healthz
		h = uiSignsIn(g.ui, h)
	}
	h = limitBody(g.cfg.maxBody(), h)
	if g.authn == nil {
		h = localOnly(h)
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusForbidden, "cross_origin",
			fmt.Sprintf("A cross-origin %s from a browser is refused.", r.Method),
			"Call the gateway from a program, or use the UI at /ui/ on the gateway's own address.")
	}))
	h = cop.Handler(h)
	return recoverPanics(g, uiHeaders(h))
}

// uiSignsIn sends /ui and /ui/... to the UI, which authenticates them
// itself (a session cookie from its login page, or credentials in the
// headers), redirects GET / to it, and sends everything else to next.
func uiSignsIn(u http.Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/ui" || strings.HasPrefix(p, "/ui/"):
			u.ServeHTTP(w, r)
		case p == "/" && r.Method == http.MethodGet && r.Header.Get("Authorization") == "" && r.Header.Get("X-Reach-Key") == "":
			http.Redirect(w, r, "/ui/", http.StatusFound) // a browser's first visit
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// uiHeaders gives every answer under /ui the UI's headers (no framing,
// its CSP) before anything else answers: a 401, a cross-origin 403, the
// redirect of /ui.
func uiHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "/ui" || strings.HasPrefix(p, "/ui/") {
			ui.SetHeaders(w.Header())
		}
		next.ServeHTTP(w, r)
	})
}

// apiError is the body of every error answer: {"error": {...}}.
type apiError = httpjson.Error

func writeError(w http.ResponseWriter, status int, code, msg, suggestion string) {
	httpjson.WriteError(w, status, code, msg, suggestion)
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// limitBody answers 413 (as JSON) for a body larger than n, whether its
// length is declared or not.
func limitBody(n int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > n {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Sprintf("The request body is %d bytes; the limit is %d.", r.ContentLength, n),
				"Send fewer or smaller calls per request, or raise max_body_bytes in the configuration.")
			return
		}
		if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
			// A body of no declared length (chunked): read it here, so that
			// every route answers its excess alike.
			data, err := io.ReadAll(io.LimitReader(r.Body, n+1))
			switch {
			case err != nil:
				writeError(w, http.StatusBadRequest, "bad_body", "Reading the request body failed: "+err.Error()+".", "Send the body again.")
				return
			case int64(len(data)) > n:
				writeError(w, http.StatusRequestEntityTooLarge, "body_too_large",
					fmt.Sprintf("The request body is larger than %d bytes.", n),
					"Send fewer or smaller calls per request, or raise max_body_bytes in the configuration.")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(data))
			r.ContentLength = int64(len(data))
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, n)
		}
		next.ServeHTTP(w, r)
	})
}

// readBody reads a limited body, answering 413 or 400 itself on failure.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Sprintf("The request body is larger than %d bytes.", mbe.Limit),
				"Send fewer or smaller calls per request, or raise max_body_bytes in the configuration.")
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "bad_body", "Reading the request body failed: "+err.Error()+".", "Send the body again.")
		return nil, false
	}
	return data, true
}

// localOnly refuses requests whose Host is not a loopback name, so that a
// web page cannot reach the gateway through DNS rebinding.
func localOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			writeError(w, http.StatusForbidden, "not_local",
				fmt.Sprintf("Host %q is not a loopback name; reach serves this machine only.", r.Host),
				"Connect to 127.0.0.1, [::1] or localhost.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func recoverPanics(g *Gateway, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				g.log.Error("panic serving a request", "path", r.URL.Path, "panic", fmt.Sprint(v))
				writeError(w, http.StatusInternalServerError, "internal", "The gateway failed while serving this request.",
					"Retry; if it persists, report it with the gateway's log.")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// linkFromHeaders reads Reach-Parent, Reach-Scene, traceparent and
// baggage. A header it refuses is a *linkError that says which.
func linkFromHeaders(h http.Header) (link, error) {
	var l link
	if p := strings.TrimSpace(h.Get(HeaderParent)); p != "" {
		id, err := parseFrameID(p)
		if err != nil {
			return l, &linkError{Status: http.StatusBadRequest, Code: "bad_parent", Message: upperFirst(fmt.Sprintf("%s: %v.", HeaderParent, err)),
				Suggestion: "Send the 16-hex-digit id of a frame, or omit the header."}
		}
		l.Parent = id
	}
	l.Trace, l.TraceID, _ = parseTraceparent(h.Get(HeaderTraceparent))
	l.Scene = strings.TrimSpace(h.Get(HeaderScene))
	if err := checkScene(l.Scene); err != nil {
		return l, &linkError{Status: http.StatusBadRequest, Code: "bad_scene", Message: upperFirst(fmt.Sprintf("%s: %v.", HeaderScene, err)),
			Suggestion: "Name the scene with letters, digits, '_', '-' or '.' (chitchat, say), or omit the header."}
	}
	if id := strings.TrimSpace(h.Get(HeaderRequest)); id != "" {
		l.Request = id
	}
	for _, b := range h.Values(HeaderBaggage) {
		if id := baggageRequest(b); id != "" {
			l.Request = id
		}
	}
	return l, nil
}

// postCalls runs an R3 envelope: {"request_id", "tool_calls": [...]}.
func (g *Gateway) postCalls(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	env, err := reach.DecodeEnvelope(data)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_envelope", upperFirst(err.Error())+".",
			`Send {"request_id": "optional", "tool_calls": [{"call_id": "c1", "tool": "<name>", "arguments": {...}}]}.`)
		return
	}
	l, err := linkFromHeaders(r.Header)
	if le := (*linkError)(nil); errors.As(err, &le) {
		writeError(w, le.Status, le.Code, le.Message, le.Suggestion)
		return
	}
	if env.RequestID != "" {
		if l.Request != "" && l.Request != env.RequestID {
			writeError(w, http.StatusConflict, "request_mismatch",
				fmt.Sprintf("The envelope names request %s but the baggage header names %s.", env.RequestID, l.Request),
				"Name one request.")
			return
		}
		l.Request = env.RequestID
	}
	l.Agent = "api" // place bounds the request id
	caller, _ := auth.IdentityFrom(r.Context())
	for _, c := range env.ToolCalls {
		if f := g.chosen.get(c.ID, l.Request, caller); f != nil {
			l.Chosen = f
			break
		}
	}
	ctx, req, done, err := g.place(r.Context(), l, func() (*reach.Request, func(), error) {
		who, _ := auth.IdentityFrom(r.Context())
		return g.reqs.fresh(l, who)
	})
	if err != nil {
		var le *linkError
		if errors.As(err, &le) {
			writeError(w, le.Status, le.Code, le.Message, le.Suggestion)
			return
		}
		writeError(w, http.StatusInternalServerError, "internal", err.Error(), "")
		return
	}
	defer done()
	resp := g.rt.Batch(ctx, env)
	resp.RequestID = req.ID()
	writeJSON(w, http.StatusOK, resp)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// requestSummary is a request in GET /v1/requests.
type requestSummary struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Activity is what it is doing now: running, waiting_for_approval,
	// idle, stopped or done (telemetry.RequestActivity).
	Activity  string    `json:"activity"`
	Principal string    `json:"principal"`
	Agent     string    `json:"agent"`
	Parent    string    `json:"parent,omitempty"`
	Started   time.Time `json:"started"`
	ToolCalls int       `json:"tool_calls"`
	Turns     int       `json:"turns"`
	Tokens    int64     `json:"tokens"`
	Cost      float64   `json:"cost"`
	Refusals  int       `json:"refusals"`
}

func summarize(r *reach.Request, a telemetry.Activity) requestSummary {
	u := r.Usage()
	s := requestSummary{ID: r.ID(), State: r.State(), Activity: a.State, Principal: r.Principal(), Agent: r.Agent(),
		Started: r.Started().UTC(), ToolCalls: u.ToolCalls, Turns: u.Turns, Tokens: u.Tokens, Cost: u.Cost, Refusals: a.Refused}
	if p := r.Parent(); p != nil {
		s.Parent = p.ID()
	}
	return s
}

// listRequests is GET /v1/requests[?state=running|waiting_for_approval|
// idle|stopped|done&limit=N]: the requests the caller sees, newest first.
func (g *Gateway) listRequests(w http.ResponseWriter, hr *http.Request) {
	q := hr.URL.Query()
	state := q.Get("state")
	if state != "" && state != telemetry.StateDone && !slices.Contains(telemetry.LiveStates, state) {
		writeError(w, http.StatusBadRequest, "bad_state", fmt.Sprintf("There is no request state %q.", state),
			"Use running, waiting_for_approval, idle, stopped or done.")
		return
	}
	limit := -1
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit=%q is not a number of requests.", l), "Use a whole number, e.g. limit=20.")
			return
		}
		limit = n
	}
	rs := g.rt.Requests()
	out := make([]requestSummary, 0, len(rs))
	now := time.Now()
	for _, r := range rs {
		if limit >= 0 && len(out) >= limit {
			break
		}
		if !g.sees(hr, r) {
			continue
		}
		a := telemetry.RequestActivity(r, now)
		if state != "" && a.State != state {
			continue
		}
		out = append(out, summarize(r, a))
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": out})
}

// budgetJSON is a budget with the wall clock as a duration string.
type budgetJSON struct {
	Turns     int     `json:"turns,omitempty"`
	Depth     int     `json:"depth,omitempty"`
	ToolCalls int     `json:"tool_calls,omitempty"`
	Tokens    int64   `json:"tokens,omitempty"`
	Cost      float64 `json:"cost,omitempty"`
	Wall      string  `json:"wall,omitempty"`
}

func budgetOf(b reach.Budget) budgetJSON {
	j := budgetJSON{Turns: b.Turns, Depth: b.Depth, ToolCalls: b.ToolCalls, Tokens: b.Tokens, Cost: b.Cost}
	if b.Wall > 0 {
		j.Wall = b.Wall.Round(time.Millisecond).String()
	}
	return j
}

type usageJSON struct {
	Turns     int     `json:"turns"`
	ToolCalls int     `json:"tool_calls"`
	Tokens    int64   `json:"tokens"`
	Cost      float64 `json:"cost"`
	Wall      string  `json:"wall"`
	MaxDepth  int     `json:"max_depth"`
}

func (g *Gateway) lookup(w http.ResponseWriter, r *http.Request) (*reach.Request, bool) {
	id := r.PathValue("id")
	req, ok := g.rt.Lookup(id)
	if !ok {
		writeError(w, http.StatusNotFound, "unknown_request", fmt.Sprintf("There is no request %q here.", id),
			"List the requests with GET /v1/requests; ended requests are kept for a while, then forgotten.")
		return nil, false
	}
	if !g.sees(r, req) {
		writeError(w, http.StatusForbidden, "not_your_request", fmt.Sprintf("Request %s belongs to another principal.", id),
			"Only its principal, or a principal with the role "+operatorRole+", may see or stop it; list yours with GET /v1/requests.")
		return nil, false
	}
	return req, true
}

func (g *Gateway) getRequest(w http.ResponseWriter, r *http.Request) {
	req, ok := g.lookup(w, r)
	if !ok {
		return
	}
	u := req.Usage()
	out := struct {
		requestSummary
		Scene    string       `json:"scene,omitempty"`
		Budget   budgetJSON   `json:"budget"`
		Used     usageJSON    `json:"used"`
		Left     budgetJSON   `json:"left"`
		Stop     *reach.Cause `json:"stop,omitempty"`
		Children []string     `json:"children,omitempty"`
		Frames   []frameJSON  `json:"frames"`
	}{
		requestSummary: summarize(req, telemetry.RequestActivity(req, time.Now())),
		Scene:          req.Scene(),
		Budget:         budgetOf(req.Budget()),
		Used: usageJSON{Turns: u.Turns, ToolCalls: u.ToolCalls, Tokens: u.Tokens, Cost: u.Cost,
			Wall: u.Wall.Round(time.Millisecond).String(), MaxDepth: u.MaxDepth},
		Left:   budgetOf(req.Remaining()),
		Stop:   req.StopCause(),
		Frames: graphFrames(req),
	}
	for _, c := range req.Children() {
		out.Children = append(out.Children, c.ID())
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *Gateway) getGraph(w http.ResponseWriter, r *http.Request) {
	req, ok := g.lookup(w, r)
	if !ok {
		return
	}
	switch f := r.URL.Query().Get("format"); f {
	case "", "json":
		writeJSON(w, http.StatusOK, graphOf(req))
	case "dot":
		w.Header().Set("Content-Type", "text/vnd.graphviz; charset=utf-8")
		w.Write(graph.DOT(req))
	case "svg":
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write(graph.SVG(req))
	default:
		writeError(w, http.StatusBadRequest, "bad_format", fmt.Sprintf("Unknown graph format %q.", f), "Use format=json, format=dot or format=svg.")
	}
}

// endRequest is POST /v1/requests/{id}/end: the agent's work on the request
// is done; its sagas are settled (nothing to undo after a restart).
func (g *Gateway) endRequest(w http.ResponseWriter, r *http.Request) {
	req, ok := g.lookup(w, r)
	if !ok {
		return
	}
	g.reqs.end(req.ID())
	req.End()
	writeJSON(w, http.StatusOK, map[string]any{"id": req.ID(), "state": req.State()})
}

func (g *Gateway) cancelRequest(w http.ResponseWriter, r *http.Request) {
	req, ok := g.lookup(w, r)
	if !ok {
		return
	}
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	var in struct {
		Mode   string `json:"mode"`
		Reason string `json:"reason"`
	}
	if len(bytes.TrimSpace(data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			writeError(w, http.StatusBadRequest, "bad_body", "The body is not a cancel order: "+err.Error()+".",
				`Send {"mode": "soft" | "cancel" | "isolate", "reason": "why"}.`)
			return
		}
	}
	if in.Mode == "" {
		in.Mode = "cancel"
	}
	mode, err := reach.ParseStopMode(in.Mode)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_mode", upperFirst(err.Error())+".",
			"soft finishes what is in flight, cancel cancels it, isolate also refuses late results.")
		return
	}
	if in.Reason == "" {
		in.Reason = "cancelled through the API"
	}
	if len(in.Reason) > 500 {
		in.Reason = in.Reason[:500]
	}
	by := "api"
	if g.authn != nil {
		by = principalOf(r)
	}
	req.Stop(mode, by, in.Reason)
	g.log.Info("request stopped through the API", "request", req.ID(), "mode", in.Mode)
	writeJSON(w, http.StatusOK, map[string]any{"id": req.ID(), "state": req.State(), "stop": req.StopCause()})
}
