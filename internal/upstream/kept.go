package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP client that calls an upstream's tool through the gateway gets
// what the upstream sent: its content blocks and its structuredContent as
// they were (secrets masked), not reach's rendering of the call's data
// (which, for a result with structuredContent, is that JSON as text). The
// runtime works on the data (resultData) as before; when the data the
// model would see is the data the upstream's answer gave (nothing shaped,
// cut or masked it), the front sends the upstream's own blocks: it makes
// the call with a context from KeepFor, and asks Kept.Result afterwards.
//
// Most answers are one text block that reach's rendering reproduces
// exactly; for them nothing is copied or decoded again.

// keptKey carries a *Kept from the front to the upstream's Func.
type keptKey struct{}

// Kept is what an upstream answered a call with, for the front that made
// the call. Safe for concurrent use.
type Kept struct {
	mu         sync.Mutex
	frame      reach.FrameID    // the call that filled it
	data       json.RawMessage  // what the Func returned
	wire       *mcpwire.Result  // the answer as the wire client read it, with its content (nil without)
	sdk        []mcp.Content    // or as the SDK's client did
	structured any              // json.RawMessage or any; nil if none
	red        *redact.Redactor // masks what is sent on
	// sessionless: the call's client is on the sessionless protocol, to
	// which reach relays no sampling or elicitation (notAsked says so).
	sessionless bool
}

// FromSessionless notes that the call's client is on the sessionless
// protocol (2026-07-28 and later): the sampling and elicitation requests
// of its call are refused with that reason. Call it before the call.
func (k *Kept) FromSessionless() {
	k.mu.Lock()
	k.sessionless = true
	k.mu.Unlock()
}

// fromSessionless reports whether FromSessionless was called.
func (k *Kept) fromSessionless() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.sessionless
}

// KeepFor returns ctx carrying an empty *Kept for the call made with it
// and, unless caller is nil, a copy of the call's downstream client, for
// the tools the call reaches (CallerFrom): one context value, one
// allocation. The returned *Caller is the one ctx carries.
func KeepFor(ctx context.Context, caller *Caller) (context.Context, *Kept, *Caller) {
	k := &keptCtx{Context: ctx}
	if caller != nil {
		k.caller, k.hasCaller = *caller, true
		return k, &k.kept, &k.caller
	}
	return k, &k.kept, nil
}

// keptCtx carries a call's *Kept and, if it has one, its *Caller.
type keptCtx struct {
	context.Context
	kept      Kept
	caller    Caller
	hasCaller bool
}

func (k *keptCtx) Value(key any) any {
	switch key.(type) {
	case keptKey:
		return &k.kept
	case callerKey:
		if k.hasCaller {
			return &k.caller
		}
	}
	return k.Context.Value(key)
}

// keep records, for the front that made the call in ctx, what the
// upstream answered and the data the Func returns. A call nested in
// another tool's Func (the context is the outer call's) fills it with its
// own frame, and the front does not use it for the outer call.
func keep(ctx context.Context, wire *mcpwire.Result, sdk []mcp.Content, structured any, data json.RawMessage, red *redact.Redactor) {
	s, ok := ctx.Value(keptKey{}).(*Kept)
	if !ok {
		return
	}
	f, ok := reach.FrameFrom(ctx)
	if !ok {
		return
	}
	s.mu.Lock()
	s.frame, s.data, s.wire, s.sdk, s.structured, s.red = f.ID, data, nil, sdk, structured, red
	if wire != nil && wire.Content != nil {
		s.wire = wire
	}
	s.mu.Unlock()
}

// Result returns what the client of res's call gets: rendered (reach's
// rendering of the call's data), or the upstream's own content blocks and
// structuredContent (masked) with rendered's _meta when they differ from it
// and res is what the upstream answered unchanged (its frame's, a success,
// data nothing shaped, cut or masked).
func (s *Kept) Result(res *reach.Result, rendered *mcp.CallToolResult) *mcp.CallToolResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res.Status != reach.StatusSuccess || s.frame == 0 || s.frame != res.Frame || !bytes.Equal(s.data, res.Data) || len(res.Notes) > 0 {
		return rendered
	}
	if s.sameAs(rendered) {
		return rendered
	}
	var content any = s.sdk
	if s.wire != nil {
		content = s.wire.Content
	}
	c, err := json.Marshal(content)
	if err != nil {
		return rendered
	}
	var st json.RawMessage
	switch v := s.structured.(type) {
	case nil:
	case json.RawMessage:
		if len(v) > 0 && string(v) != "null" {
			st = v
		}
	default:
		if st, err = json.Marshal(v); err != nil {
			return rendered
		}
	}
	// Under "content", the text blocks are masked as their joined text (a
	// secret split across two blocks is found).
	doc := append(append([]byte(`{"content":`), c...), '}')
	if s.red != nil {
		doc = s.red.Redact(doc)
		if st != nil {
			st = s.red.Redact(st)
		}
	}
	var out mcp.CallToolResult
	if json.Unmarshal(doc, &out) != nil || len(out.Content) == 0 {
		return rendered
	}
	if st != nil {
		out.StructuredContent = st
	}
	out.Meta = rendered.Meta
	return &out
}

// sameAs reports whether the upstream sent what rendered says: one text
// block of the same text, and the same structured content (or none).
func (s *Kept) sameAs(rendered *mcp.CallToolResult) bool {
	if len(rendered.Content) != 1 {
		return false
	}
	rt, ok := rendered.Content[0].(*mcp.TextContent)
	if !ok {
		return false
	}
	var text string
	switch {
	case s.wire != nil:
		c := s.wire.Content
		if len(c) != 1 {
			return false
		}
		if bytes.Contains(c[0], []byte(`"annotations"`)) || bytes.Contains(c[0], []byte(`"_meta"`)) {
			return false // more than a text: the slow way keeps it
		}
		if s.wire.OnlyTextRead { // read once, as the call's data was made
			text = s.wire.OnlyText
			break
		}
		typ, t, ok := mcpwire.ContentText(c[0])
		if !ok || typ != "text" {
			return false
		}
		text = t
	case s.sdk != nil:
		c := s.sdk
		if len(c) != 1 {
			return false
		}
		tc, ok := c[0].(*mcp.TextContent)
		if !ok || tc.Meta != nil || tc.Annotations != nil {
			return false
		}
		text = tc.Text
	default:
		return false
	}
	if text != rt.Text {
		return false
	}
	got, _ := rendered.StructuredContent.(json.RawMessage)
	switch v := s.structured.(type) {
	case nil:
		return got == nil
	case json.RawMessage:
		if len(v) == 0 || string(v) == "null" {
			return got == nil
		}
		return bytes.Equal(v, got)
	}
	return false // structured content as the SDK decoded it: compare the slow way
}
