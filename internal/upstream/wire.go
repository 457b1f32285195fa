package upstream

// The wire client: tools/call on an HTTP upstream without the SDK's
// decoder. It posts tools/call on the SDK client session's id (through
// mcpwire's pooled connections to a plain-HTTP upstream, else net/http)
// and reads the JSON or SSE answer, relaying progress, log messages,
// sampling and elicitation in order and answering pings. It falls back to
// the SDK's client for what it does not handle (stdio, the sessionless
// protocol).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireSession is what the wire client needs of an upstream SDK session.
type wireSession struct {
	cs *mcp.ClientSession
	mcpwire.Session
}

// wireOf returns the wire client's view of cs, or nil when the wire client
// cannot use cs (stdio, no session id, the sessionless protocol). The view
// of the session last called is kept: a session's id and protocol never
// change, and its calls need not make a view each.
func (u *upstream) wireOf(cs *mcp.ClientSession) *wireSession {
	if w := u.wired.Load(); w != nil && w.cs == cs {
		return w
	}
	if u.cfg.URL == "" || cs.ID() == "" || cs.InitializeResult() == nil {
		return nil
	}
	v := cs.InitializeResult().ProtocolVersion
	if v >= mcpwire.StatelessProtocol {
		return nil
	}
	w := &wireSession{cs: cs, Session: mcpwire.Session{ID: cs.ID(), Protocol: v}}
	u.wired.Store(w)
	return w
}

// errSessionGone says the upstream no longer knows the session (HTTP 404).
var errSessionGone = errors.New("the upstream ended the session")

// wireCall is one tools/call of the wire client: its session, its
// JSON-RPC id ("reach-<seq>"), and where the upstream's progress goes:
// under token upstream, to the downstream client (caller) that asked for
// it.
type wireCall struct {
	s      *wireSession
	seq    uint64
	token  string  // "" when the caller asked for no progress
	caller *Caller // the downstream client, if the call came from one
	asked  *asking // its sampling and elicitation requests being relayed; made at the first

	// The answer's message as an SSE answer is read into it, and the
	// tool result read from that: made with the call, not each on its own.
	msg mcpwire.Message
	res mcpwire.Result
}

// appendID appends the call's JSON-RPC id, as JSON, to b. (A number in the
// call, not the id's text, so that the call needs no allocation for it.)
func (c *wireCall) appendID(b []byte) []byte {
	b = append(b, `"reach-`...)
	b = strconv.AppendUint(b, c.seq, 10)
	return append(b, '"')
}

// callWire calls a tool on the upstream without the SDK's decoder: it
// posts tools/call on the session and reads a JSON or SSE answer. When
// ctx ends it drops the HTTP request and tells the upstream with
// notifications/cancelled.
func (u *upstream) callWire(ctx context.Context, s *wireSession, name string, args json.RawMessage, meta mcpwire.CallLink, caller *Caller) (*mcpwire.Result, error) {
	c := &wireCall{s: s, seq: u.tokens.Add(1), caller: caller}
	if caller != nil && caller.Progress != nil {
		token := u.cfg.Name + "-" + strconv.FormatUint(u.tokens.Add(1), 10)
		meta.ProgressToken = token
		c.token = token
	}
	buf := mcpwire.GetBuffer()
	defer mcpwire.PutBuffer(buf)
	var id [32]byte
	buf.Write(mcpwire.AppendCallLink(buf.AvailableBuffer(), c.appendID(id[:0]), name, args, &meta))
	if p := u.wire; p != nil && !p.Redirected() {
		x, err := p.RoundTrip(ctx, s.Session, buf.Bytes())
		if hb, ok := errors.AsType[*mcpwire.HeldBack](err); ok { // (errors.As with a target made for it allocated it on every call)
			// Held back before it was sent: not the upstream's failure,
			// nor one the runtime retries or counts (reach.NotSentError).
			return nil, &reach.NotSentError{Err: hb.Err}
		}
		if err != nil {
			return nil, u.wireFailed(ctx, c, "calling", err)
		}
		if !isRedirect(x.Status) {
			res, err := u.wireAnswer(ctx, c, answer{x.Status, x.StatusText, x.ContentType, &x.Body})
			x.Release(ctx.Err() != nil)
			return res, err
		}
		// The endpoint moved (…/mcp to …/mcp/, say): nothing ran. This
		// upstream's calls go through net/http from now on, which follows.
		io.Copy(io.Discard, io.LimitReader(&x.Body, 64<<10))
		status := x.Status // x is not to be read once released
		x.Release(ctx.Err() != nil)
		if p.MarkRedirected() {
			u.log.Info("the upstream's endpoint redirects; its calls now follow the redirect through net/http", "upstream", u.cfg.Name, "status", status)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.URL, bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, err
	}
	u.wireHeaders(req, s)
	resp, err := u.http.Do(req)
	if err != nil {
		return nil, u.wireFailed(ctx, c, "calling", err)
	}
	defer resp.Body.Close()
	return u.wireAnswer(ctx, c, answer{resp.StatusCode, resp.Status, resp.Header.Get("Content-Type"), resp.Body})
}

// answer is the head and body of an upstream's answer to a call.
type answer struct {
	status      int
	statusText  string
	contentType string
	body        io.Reader
}

// isRedirect reports whether an HTTP status sends the request elsewhere.
func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// wireFailed is the error of a call whose exchange failed: the cause of
// ctx when it ended (and the upstream is told), else unavailable.
func (u *upstream) wireFailed(ctx context.Context, c *wireCall, doing string, err error) error {
	if ctx.Err() != nil {
		u.cancelWire(ctx, c.s, string(c.appendID(nil)))
		return context.Cause(ctx)
	}
	if doing == "calling" {
		u.reached(err) // the exchange failed: the upstream is not reachable
		return &reach.ToolError{Type: "unavailable", Message: fmt.Sprintf("calling upstream %s failed: %v", u.cfg.Name, err)}
	}
	if tl, ok := errors.AsType[*mcpwire.TooLargeError](err); ok {
		return u.tooLarge(tl.Limit)
	}
	return &reach.ToolError{Type: "unavailable", Message: fmt.Sprintf("reading upstream %s's answer failed: %v", u.cfg.Name, err)}
}

// tooLarge is the error of a call whose answer is larger than limit bytes,
// the bound of what reach passes on, on HTTP as on stdio. Not "unavailable":
// that is retried (the answer read again, as large) and counted against the
// upstream's breaker.
func (u *upstream) tooLarge(limit int64) error {
	return &reach.ToolError{Type: "too_large", Message: fmt.Sprintf("upstream %s's answer is larger than %d bytes, more than reach passes on: ask the tool for less (a narrower query, a smaller page or range)", u.cfg.Name, limit)}
}

// wireAnswer reads an upstream's answer to call c: a JSON or SSE body with
// its response, or an HTTP error.
func (u *upstream) wireAnswer(ctx context.Context, c *wireCall, a answer) (*mcpwire.Result, error) {
	status, statusText, body := a.status, a.statusText, a.body
	switch {
	case status == http.StatusNotFound:
		io.Copy(io.Discard, io.LimitReader(body, 4096))
		return nil, errSessionGone
	case status != http.StatusOK:
		b, _ := io.ReadAll(io.LimitReader(body, 512))
		typ := "upstream_error"
		switch {
		case status >= 500 || status == http.StatusTooManyRequests:
			typ = "unavailable"
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			typ = "forbidden" // reach's credentials, not the call's arguments
		}
		if len(statusText) < 3 || statusText[:3] != strconv.Itoa(status) {
			statusText = strconv.Itoa(status) + " " + statusText
		}
		return nil, &reach.ToolError{Type: typ, Message: fmt.Sprintf("upstream %s answered %s: %s", u.cfg.Name, statusText, u.p.cutBody(b))}
	}
	var msg *mcpwire.Message
	var err error
	if strings.HasPrefix(a.contentType, "text/event-stream") {
		var cur mcpwire.SSECursor
		err = u.readSSE(ctx, c, body, &cur)
		if errors.Is(err, mcpwire.ErrStreamClosed) {
			err = u.resumeSSE(ctx, c, &cur)
		}
		msg = &c.msg
	} else {
		msg, err = mcpwire.ReadJSONAnswer(body)
	}
	if err != nil {
		return nil, u.wireFailed(ctx, c, "reading", err)
	}
	if msg.Error != nil {
		return nil, u.callError(msg.Error)
	}
	res := &c.res
	if err := res.ParseValid(msg.Result); err != nil { // the answer was checked as it was read
		return nil, &reach.ToolError{Type: "upstream_error", Message: fmt.Sprintf("upstream %s answered tools/call with something else than a tool result", u.cfg.Name)}
	}
	return res, nil
}

func (u *upstream) wireHeaders(req *http.Request, ls *wireSession) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpwire.HeaderSession, ls.ID)
	req.Header.Set(mcpwire.HeaderProtocol, ls.Protocol)
}

// readSSE reads an SSE answer until the response to call c, passing
// progress and log messages on to the calling client in the order they
// come, and answering the upstream's requests: pings here, sampling and
// elicitation through the calling client, others refused. cur follows the
// stream (see mcpwire.ReadSSE); resumeSSE picks up a stream the upstream
// closed.
func (u *upstream) readSSE(ctx context.Context, c *wireCall, body io.Reader, cur *mcpwire.SSECursor) error {
	var idBuf [32]byte
	id := c.appendID(idBuf[:0])
	return mcpwire.ReadSSEInto(body, cur, &c.msg, func(msg *mcpwire.Message) bool {
		switch {
		case msg.Method == "" && bytes.Equal(msg.ID, id):
			return true
		case msg.Method == "notifications/progress" && c.token != "":
			var p mcp.ProgressNotificationParams
			if json.Unmarshal(msg.Params, &p) == nil && p.ProgressToken == c.token {
				p.ProgressToken = c.caller.Progress
				p.Meta = nil
				u.p.maskProgress(&p)
				c.caller.Session.NotifyProgress(c.caller.Route, &p)
			}
		case msg.Method == "notifications/message":
			if c.caller != nil {
				var p mcp.LoggingMessageParams
				if json.Unmarshal(msg.Params, &p) == nil {
					if m := u.p.maskLog(&p); m != nil {
						c.caller.Session.Log(c.caller.Route, m) // on the call's stream, if the client's level lets it through
					}
				}
			}
		case msg.Method != "" && len(msg.ID) > 0:
			// A request from the upstream on this stream: answer pings,
			// relay sampling and elicitation to the calling client, refuse
			// the rest.
			switch msg.Method {
			case "ping":
				u.postWire(c.s, []byte(`{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{}}`))
			case "sampling/createMessage", "elicitation/create":
				if c.asked == nil {
					c.asked = new(asking)
				}
				if !c.asked.take() {
					out := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":`, msg.ID)
					out = jsonscan.AppendQuoted(out, tooManyAsked(msg.Method))
					u.postWire(c.s, append(out, "}}"...))
					break
				}
				go func(asked *asking, method string, id, params json.RawMessage) {
					defer asked.done()
					u.answerWire(ctx, c.s, method, id, params)
				}(c.asked, msg.Method, bytes.Clone(msg.ID), bytes.Clone(msg.Params))
			default:
				out := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":`, msg.ID)
				out = jsonscan.AppendQuoted(out, "reach does not handle "+msg.Method+" from upstreams")
				u.postWire(c.s, append(out, "}}"...))
			}
		}
		return false
	})
}

// resumeSSE reconnects to a call's SSE stream that the upstream closed
// before answering (SEP-1699 polling): a GET with the Last-Event-ID after
// the delay the upstream asked for, as often as it closes the stream,
// until the response comes, the call ends, or mcpwire.MaxResumes reconnections.
// A session that is gone by then is an error, not a new session: the call
// was received, and a new session would run it twice.
func (u *upstream) resumeSSE(ctx context.Context, c *wireCall, cur *mcpwire.SSECursor) error {
	for range mcpwire.MaxResumes {
		t := time.NewTimer(cur.ResumeDelay())
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.cfg.URL, nil)
		if err != nil {
			return err
		}
		u.wireHeaders(req, c.s)
		req.Header.Del("Content-Type")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", cur.LastID)
		resp, err := u.http.Do(req)
		if err != nil {
			return errors.New(withoutQuery(err.Error(), u.cfg.URL))
		}
		ct := resp.Header.Get("Content-Type")
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			return fmt.Errorf("the upstream closed the call's stream, and resuming it (GET with Last-Event-ID) was answered %s %s", resp.Status, u.p.cutBody(b))
		}
		err = u.readSSE(ctx, c, resp.Body, cur)
		resp.Body.Close()
		if !errors.Is(err, mcpwire.ErrStreamClosed) {
			return err
		}
	}
	return fmt.Errorf("the upstream closed the call's stream %d times without answering", mcpwire.MaxResumes+1)
}

// answerWire answers an upstream's sampling or elicitation request, made
// on the stream of a tool call (ctx), through the client of that call, and
// posts the answer on the session.
func (u *upstream) answerWire(ctx context.Context, ls *wireSession, method string, id, params json.RawMessage) {
	var res any
	var err error
	var down *mcp.ServerSession
	if c := CallerFrom(ctx); c != nil {
		down = c.Session
	}
	switch method {
	case "sampling/createMessage":
		var p mcp.CreateMessageParams
		if err = json.Unmarshal(params, &p); err != nil {
			err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "reach could not read the sampling request: " + err.Error()}
		} else {
			res, err = u.sample(ctx, ctx, down, &p)
		}
	case "elicitation/create":
		var p mcp.ElicitParams
		if err = json.Unmarshal(params, &p); err != nil {
			err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "reach could not read the elicitation request: " + err.Error()}
		} else {
			res, err = u.elicit(ctx, ctx, down, &p)
		}
	}
	var b []byte
	if err == nil {
		b, err = json.Marshal(res)
	}
	var out []byte
	if err != nil {
		we := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		errors.As(err, &we)
		e, _ := json.Marshal(we)
		out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`, id, e)
	} else {
		out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, b)
	}
	u.postWire(ls, out)
}

// cancelWire tells the upstream that the call id is cancelled, with the
// cause of ctx.
func (u *upstream) cancelWire(ctx context.Context, ls *wireSession, id string) {
	reason, _ := json.Marshal(context.Cause(ctx).Error())
	go u.postWire(ls, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":`+string(reason)+`}}`))
}

// postWire posts a notification or a response on the session.
func (u *upstream) postWire(ls *wireSession, body []byte) {
	ctx, cancel := context.WithTimeout(u.p.life, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return
	}
	u.wireHeaders(req, ls)
	resp, err := u.http.Do(req)
	if err != nil {
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
}

// withoutQuery keeps a transport error's message from echoing the query of
// the upstream's URL (which may carry a key).
func withoutQuery(msg, url string) string {
	if i := strings.IndexByte(url, '?'); i >= 0 {
		msg = strings.ReplaceAll(msg, url[i:], "?…")
	}
	return msg
}

// cutBody is the start of an upstream's error body, as an error's message
// shows it: masked here, where its end is the cut (which may fall inside
// a secret the body spells, as an endpoint echoing the token it was sent
// does). In the message, followed by more text, the secret's first part
// would be neither whole nor a text's end, and no mask would find it.
func (p *Pool) cutBody(b []byte) string {
	return strings.TrimSpace(p.redactor.RedactString(string(b)))
}
