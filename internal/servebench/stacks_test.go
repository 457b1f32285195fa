package servebench

// The HTTP stacks a gateway's tools/call path can be built on, measured
// side by side: a middle process that serves the client's POST with one
// server (net/http or fasthttp), sends the tools/call on to the upstream
// with one client (net/http's, fasthttp's HostClient, or the hand-written
// one in internal/mcpwire), reads the upstream's SSE answer up to the
// response with mcpwire.ReadSSE, and answers it as JSON: what reach's fast
// path does around its guards, without them. Every middle does the same
// work but for the stacks, so the differences in CPU per call are theirs.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/valyala/fasthttp"
)

// The candidates: server × client.
var (
	stackServers = []string{"nethttp", "fasthttp", "inline"}
	stackClients = []string{"nethttp", "fasthttp", "mcpwire"}
)

// stackRole serves role "stack-SERVER-CLIENT" on ln in front of the
// upstream target.
func stackRole(ln net.Listener, role, target string) error {
	parts := strings.Split(role, "-")
	if len(parts) != 3 {
		return errors.New("want stack-SERVER-CLIENT")
	}
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	fwd, err := newForwarder(parts[2], target)
	if err != nil {
		return err
	}
	// Everything but a tools/call on a session (initialize, notifications,
	// DELETE) is passed on by net/http's client as it is.
	other := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	passOn := func(method string, hdr func(string) string, body []byte) (int, http.Header, []byte, error) {
		req, err := http.NewRequest(method, target, bytes.NewReader(body))
		if err != nil {
			return 0, nil, nil, err
		}
		for _, k := range []string{"Content-Type", "Accept", mcpwire.HeaderSession, mcpwire.HeaderProtocol} {
			if v := hdr(k); v != "" {
				req.Header.Set(k, v)
			}
		}
		resp, err := other.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b, err
	}
	var h http.Handler
	switch parts[1] {
	case "nethttp", "inline":
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			buf := mcpwire.GetBuffer()
			defer mcpwire.PutBuffer(buf)
			if _, err := buf.ReadFrom(r.Body); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			sid := r.Header.Get(mcpwire.HeaderSession)
			var msg mcpwire.Message
			if sid != "" && r.Method == http.MethodPost && mcpwire.ParseEnvelope(buf.Bytes(), &msg) && msg.Method == "tools/call" {
				out := mcpwire.GetBuffer()
				defer mcpwire.PutBuffer(out)
				if err := fwd.call(r.Context(), mcpwire.Session{ID: sid, Protocol: r.Header.Get(mcpwire.HeaderProtocol)}, buf.Bytes(), out); err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				w.Header()["Content-Type"] = []string{"application/json"}
				w.Write(out.Bytes())
				return
			}
			status, h, b, err := passOn(r.Method, r.Header.Get, buf.Bytes())
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			for _, k := range []string{"Content-Type", mcpwire.HeaderSession} {
				if v := h.Get(k); v != "" {
					w.Header().Set(k, v)
				}
			}
			w.WriteHeader(status)
			w.Write(b)
		})
	}
	switch parts[1] {
	case "nethttp":
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		return srv.Serve(ln)
	case "inline":
		s := &fasthttp.Server{Handler: inlineHandler(h), NoDefaultServerHeader: true}
		return s.Serve(ln)
	case "fasthttp":
		s := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
			if ctx.IsGet() {
				ctx.SetStatusCode(fasthttp.StatusMethodNotAllowed)
				return
			}
			body := ctx.PostBody()
			sid := string(ctx.Request.Header.Peek(mcpwire.HeaderSession))
			var msg mcpwire.Message
			if sid != "" && ctx.IsPost() && mcpwire.ParseEnvelope(body, &msg) && msg.Method == "tools/call" {
				out := mcpwire.GetBuffer()
				defer mcpwire.PutBuffer(out)
				if err := fwd.call(context.Background(), mcpwire.Session{ID: sid, Protocol: string(ctx.Request.Header.Peek(mcpwire.HeaderProtocol))}, body, out); err != nil {
					ctx.Error(err.Error(), fasthttp.StatusBadGateway)
					return
				}
				ctx.SetContentType("application/json")
				ctx.SetBody(out.Bytes())
				return
			}
			status, h, b, err := passOn(string(ctx.Method()), func(k string) string { return string(ctx.Request.Header.Peek(k)) }, body)
			if err != nil {
				ctx.Error(err.Error(), fasthttp.StatusBadGateway)
				return
			}
			for _, k := range []string{"Content-Type", mcpwire.HeaderSession} {
				if v := h.Get(k); v != "" {
					ctx.Response.Header.Set(k, v)
				}
			}
			ctx.SetStatusCode(status)
			ctx.SetBody(b)
		}}
		_ = u
		return s.Serve(ln)
	}
	return errors.New("unknown server " + parts[1])
}

// forwarder posts a tools/call to the upstream and writes its response
// message, as JSON, to out.
type forwarder struct {
	call func(ctx context.Context, s mcpwire.Session, body []byte, out *bytes.Buffer) error
}

func newForwarder(kind, target string) (*forwarder, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "nethttp":
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 128
		c := &http.Client{Transport: tr}
		return &forwarder{call: func(ctx context.Context, s mcpwire.Session, body []byte, out *bytes.Buffer) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(mcpwire.HeaderSession, s.ID)
			req.Header.Set(mcpwire.HeaderProtocol, s.Protocol)
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			err = answerSSE(resp.Body, out)
			io.Copy(io.Discard, resp.Body) // the final chunk, so that the connection is reused
			return err
		}}, nil
	case "fasthttp":
		hc := &fasthttp.HostClient{Addr: u.Host, MaxConns: 1024, ReadTimeout: 30 * time.Second}
		uri := target
		return &forwarder{call: func(_ context.Context, s mcpwire.Session, body []byte, out *bytes.Buffer) error {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI(uri)
			req.Header.SetMethod(fasthttp.MethodPost)
			req.Header.SetContentType("application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(mcpwire.HeaderSession, s.ID)
			req.Header.Set(mcpwire.HeaderProtocol, s.Protocol)
			req.SetBodyRaw(body)
			if err := hc.Do(req, resp); err != nil {
				return err
			}
			return answerSSE(bytes.NewReader(resp.Body()), out)
		}}, nil
	case "mcpwire":
		p := mcpwire.NewConns(target, nil)
		if p == nil {
			return nil, errors.New("mcpwire does not take " + target)
		}
		return &forwarder{call: func(ctx context.Context, s mcpwire.Session, body []byte, out *bytes.Buffer) error {
			x, err := p.RoundTrip(ctx, s, body)
			if err != nil {
				return err
			}
			err = answerSSE(&x.Body, out)
			x.Release(err != nil)
			return err
		}}, nil
	}
	return nil, errors.New("unknown client " + kind)
}

// answerSSE reads an SSE answer up to its first response and writes that
// response as JSON to out.
func answerSSE(body io.Reader, out *bytes.Buffer) error {
	var cur mcpwire.SSECursor
	msg, err := mcpwire.ReadSSE(body, &cur, func(m *mcpwire.Message) bool { return m.Method == "" })
	if err != nil {
		return err
	}
	out.WriteString(`{"jsonrpc":"2.0","id":`)
	out.Write(msg.ID)
	out.WriteString(`,"result":`)
	out.Write(msg.Result)
	out.WriteString("}\n")
	return nil
}

// stackPaths starts the upstream, the relay and every candidate stack, and
// returns their paths, direct first.
func stackPaths(b *testing.B) []*path {
	up := startRole(b, "upstream", "")
	rl := startRole(b, "relay", up.url)
	paths := []*path{
		{name: "direct", url: up.url, tool: "echo", protocol: sessionProtocol, pid: up.pid},
		{name: "relay", url: rl.url, tool: "echo", protocol: sessionProtocol, pid: rl.pid},
	}
	for _, s := range stackServers {
		for _, c := range stackClients {
			name := "stack-" + s + "-" + c
			st := startRole(b, name, up.url)
			paths = append(paths, &path{name: s + "+" + c, url: st.url, tool: "echo", protocol: sessionProtocol, pid: st.pid})
		}
	}
	return paths
}

// BenchmarkStacksLatency is BenchmarkServedLatency for the candidate
// stacks (see stackRole).
//
//	go test -run '^$' -bench StacksLatency -benchtime 2000x -count 3 ./internal/servebench/
func BenchmarkStacksLatency(b *testing.B) { latency(b, stackPaths(b)) }

// BenchmarkStacksThroughput is BenchmarkServedThroughput for the
// candidate stacks.
//
//	go test -run '^$' -bench StacksThroughput -benchtime 3x -count 3 ./internal/servebench/
func BenchmarkStacksThroughput(b *testing.B) { throughput(b, stackPaths(b)) }

// inlineHandler runs a net/http handler on fasthttp's goroutine with a
// buffered ResponseWriter (no streaming).
func inlineHandler(h http.Handler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		r := &http.Request{Method: string(ctx.Method()), RequestURI: string(ctx.RequestURI()), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Host: string(ctx.Host()), Header: make(http.Header, 12), RemoteAddr: ctx.RemoteAddr().String()}
		u, err := url.ParseRequestURI(r.RequestURI)
		if err != nil {
			ctx.Error("bad uri", 400)
			return
		}
		r.URL = u
		for k, v := range ctx.Request.Header.All() {
			key := http.CanonicalHeaderKey(string(k))
			r.Header[key] = append(r.Header[key], string(v))
		}
		body := ctx.PostBody()
		r.ContentLength = int64(len(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		c, cancel := context.WithCancel(context.Background())
		defer cancel()
		r = r.WithContext(c)
		w := &bufWriter{h: make(http.Header, 4)}
		h.ServeHTTP(w, r)
		if w.status == 0 {
			w.status = 200
		}
		ctx.SetStatusCode(w.status)
		for k, vv := range w.h {
			if k == "Content-Length" {
				continue
			}
			for _, v := range vv {
				ctx.Response.Header.Add(k, v)
			}
		}
		ctx.SetBody(w.body)
	}
}

type bufWriter struct {
	h      http.Header
	status int
	body   []byte
}

func (w *bufWriter) Header() http.Header { return w.h }
func (w *bufWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}
func (w *bufWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	w.body = append(w.body, p...)
	return len(p), nil
}
func (w *bufWriter) Flush() {}
