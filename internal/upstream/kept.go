package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/agentreach/reach"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An MCP client that calls an upstream's tool through the gateway gets
// what the upstream sent: its content blocks and its structuredContent as
// they were (secrets masked), not reach's rendering of the call's data
// (which, for a result with structuredContent, is that JSON as text). The
// runtime works on the data (resultData) as before; when the data the
// model would see is the data the upstream's answer gave (nothing shaped,
// cut or masked it), the front sends the upstream's own blocks: it makes
// the call with a context from Keep, and asks Kept.Result afterwards.

// keptKey carries a *Kept from the front to the upstream's Func.
type keptKey struct{}

// Kept is what an upstream answered a call with, for the front that made
// the call. Safe for concurrent use.
type Kept struct {
	mu         sync.Mutex
	frame      reach.FrameID   // the call that filled it
	data       json.RawMessage // what the Func returned
	content    json.RawMessage // the content blocks, masked
	structured json.RawMessage // the structuredContent, masked; nil if none
}

// Keep returns ctx carrying an empty *Kept for the call made with it.
func Keep(ctx context.Context) (context.Context, *Kept) {
	s := &Kept{}
	return context.WithValue(ctx, keptKey{}, s), s
}

// keep records, for the front that made the call in ctx, what the
// upstream answered: its blocks and structuredContent, and the data the
// Func returns. A call nested in another tool's Func (the context is the
// outer call's) fills it with its own frame, and the front does not use it
// for the outer call.
func keep(ctx context.Context, content any, structured any, data json.RawMessage, red interface{ Redact([]byte) []byte }) {
	s, ok := ctx.Value(keptKey{}).(*Kept)
	if !ok {
		return
	}
	f, ok := reach.FrameFrom(ctx)
	if !ok {
		return
	}
	c, err := json.Marshal(content)
	if err != nil {
		return
	}
	var st json.RawMessage
	switch v := structured.(type) {
	case nil:
	case json.RawMessage:
		if len(v) > 0 && string(v) != "null" {
			st = v
		}
	default:
		if st, err = json.Marshal(v); err != nil {
			return
		}
	}
	if red != nil {
		// Under "content", the text blocks are masked as their joined text
		// (a secret split across two blocks is found).
		var wrapped struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(red.Redact(append(append([]byte(`{"content":`), c...), '}')), &wrapped) != nil {
			return
		}
		c = wrapped.Content
		if st != nil {
			st = red.Redact(st)
		}
	}
	s.mu.Lock()
	s.frame, s.data, s.content, s.structured = f.ID, data, c, st
	s.mu.Unlock()
}

// Result returns the MCP result of what the upstream sent for res's call,
// its _meta what meta says, or nil when res is not it unchanged: another
// frame's, a failure, or data that reach shaped, cut or masked.
func (s *Kept) Result(res *reach.Result, meta mcp.Meta) *mcp.CallToolResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res.Status != reach.StatusSuccess || s.frame == 0 || s.frame != res.Frame || !bytes.Equal(s.data, res.Data) || len(res.Notes) > 0 {
		return nil
	}
	var out mcp.CallToolResult
	if json.Unmarshal(append(append([]byte(`{"content":`), s.content...), '}'), &out) != nil || len(out.Content) == 0 {
		return nil
	}
	if s.structured != nil {
		out.StructuredContent = s.structured
	}
	out.Meta = meta
	return &out
}
