package mcpwire

// The JSON of tools/call, read and written by hand: the envelope and params
// of a request, an upstream's answer and its tool result, and the tool
// result the gateway answers with, in the shape the front door makes (one
// text content, string _meta values, raw structured content). Anything
// else goes through encoding/json.

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"slices"

	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/strview"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AppendToolResult appends res as JSON and reports whether it could; on
// false buf is as it was.
func AppendToolResult(buf *bytes.Buffer, res *mcp.CallToolResult) bool {
	return appendToolResult(buf, res, false)
}

// CompleteResult is a final tools/call result on a protocol that types its
// results (2026-07-28 and later): it is written with "resultType":
// "complete", which those clients require of every result. It is an
// mcp.Result, so that the SDK's handlers may return it too. The result
// must have no resultType of its own (an input_required one).
type CompleteResult struct{ *mcp.CallToolResult }

// MarshalJSON writes the result with its resultType.
func (r CompleteResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.CallToolResult)
	if err != nil {
		return nil, err
	}
	return typed(b), nil
}

// typed puts "resultType":"complete" first in the JSON object b (a
// CallToolResult of the gateway's, which has none of its own).
func typed(b []byte) []byte {
	if len(b) < 2 || b[0] != '{' {
		return b
	}
	out := make([]byte, 0, len(b)+len(`"resultType":"complete",`))
	out = append(out, `{"resultType":"complete"`...)
	if b[1] != '}' {
		out = append(out, ',')
	}
	return append(out, b[1:]...)
}

func appendToolResult(buf *bytes.Buffer, res *mcp.CallToolResult, complete bool) bool {
	if res == nil || len(res.Content) != 1 || res.InputRequests != nil || res.RequestState != "" {
		return false
	}
	t, ok := res.Content[0].(*mcp.TextContent)
	if !ok || t.Meta != nil || t.Annotations != nil {
		return false
	}
	var structured json.RawMessage
	switch sc := res.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(sc) {
			return false
		}
		structured = sc
	default:
		return false
	}
	b := buf.AvailableBuffer()
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = jsonscan.AppendQuoted(b, t.Text)
	b = append(b, "}]"...)
	if complete {
		b = append(b, `,"resultType":"complete"`...)
	}
	if len(structured) > 0 {
		b = append(b, `,"structuredContent":`...)
		b = appendCompact(b, structured)
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	if len(res.Meta) > 0 {
		b = append(b, `,"_meta":`...)
		var ok bool
		if b, ok = appendMeta(b, res.Meta); !ok {
			return false // buf is as it was: b was not written to it
		}
	}
	b = append(b, '}')
	buf.Write(b)
	return true
}

// appendCompact appends JSON without insignificant space, as encoding/json
// writes a RawMessage.
func appendCompact(b, js []byte) []byte {
	var c bytes.Buffer
	if bytes.IndexAny(js, " \t\r\n") < 0 {
		return append(b, js...)
	}
	if json.Compact(&c, js) != nil {
		return append(b, js...)
	}
	return append(b, c.Bytes()...)
}

// commonMethod returns the method a JSON string token names without a
// copy, for the methods every call sends or receives; known is false for
// any other token (jsonscan.Unquote decodes it).
func commonMethod(tok []byte) (method string, known bool) {
	switch string(tok) {
	case `"tools/call"`:
		return "tools/call", true
	case `"notifications/progress"`:
		return "notifications/progress", true
	case `"notifications/cancelled"`:
		return "notifications/cancelled", true
	case `"notifications/message"`:
		return "notifications/message", true
	}
	return "", false
}

// ParseEnvelope reads a JSON-RPC message's envelope from a valid JSON
// body. Keys must be spelled exactly (encoding/json would also take other
// cases); a message it does not read goes to the SDK. id and params are
// slices of body.
func ParseEnvelope(body []byte, msg *Message) bool { return parseMessage(body, msg, false, false) }

// ParseCallParams reads tools/call params (valid JSON): the name, the
// arguments (a copy), and _meta as sent (RawMeta, not Meta). It fails with ErrNotObject for params that are not an
// object, and ErrBadMeta for a _meta that is not one.
func ParseCallParams(params []byte, p *CallParams) error { return ParseCallParamsKnown(params, p, nil) }

// ParseCallParamsKnown is ParseCallParams that takes a name without an
// escape from known when known has it (a registered tool's): known's
// string, not a copy of the params' bytes made on every call.
func ParseCallParamsKnown(params []byte, p *CallParams, known func(name []byte) (string, bool)) error {
	badMeta := false
	if !jsonscan.Members(params, func(key, value []byte) {
		switch string(key) {
		case `"name"`:
			if b, plain := jsonscan.Plain(value); plain && known != nil {
				if name, ok := known(b); ok {
					p.Name = name
					return
				}
			}
			p.Name, _ = jsonscan.Unquote(value)
		case `"arguments"`:
			p.Arguments = bytes.Clone(value)
		case `"_meta"`:
			// Kept as JSON (the last, as encoding/json would): the fast
			// lane reads the keys it needs from it, without a map.
			p.RawMeta, badMeta = nil, false
			switch {
			case value[0] == '{':
				p.RawMeta = value
				// A number past a float64 makes encoding/json, and so the
				// SDK, refuse the whole _meta: refused here as there.
				badMeta = !jsonscan.NumbersFit(value)
			case string(value) != "null":
				badMeta = true // refused, whatever the keys' order
			}
		}
	}) {
		return ErrNotObject
	}
	if badMeta {
		return ErrBadMeta
	}
	return nil
}

// ErrBadMeta is ParseCallParams's error for a _meta that is not an object.
var ErrBadMeta = errors.New("_meta is not an object")

// ErrNotObject is the error of a reader given something else than an
// object.
var ErrNotObject = errors.New("not an object")

// appendMeta appends a _meta object, its keys sorted as encoding/json
// sorts them. A value it cannot encode is written as null, and it reports
// false.
func appendMeta(b []byte, meta map[string]any) ([]byte, bool) {
	ok := true
	var keys [8]string
	ks := keys[:0]
	for k := range meta {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	b = append(b, '{')
	for i, k := range ks {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonscan.AppendQuoted(b, k)
		b = append(b, ':')
		if s, ok := meta[k].(string); ok {
			b = jsonscan.AppendQuoted(b, s)
			continue
		}
		if t, ok := meta[k].(encoding.TextAppender); ok {
			if _, js := t.(json.Marshaler); !js && !nilPointer(t) {
				// As encoding/json writes a TextMarshaler's text (a
				// TextAppender's own, in the standard library's), without
				// its copy: a frame id kept in the pooled answer.
				start := len(b)
				if out, err := t.AppendText(append(b, '"')); err == nil {
					if text := out[start+1:]; plainText(strview.Of(text)) {
						b = append(out, '"')
					} else {
						b = jsonscan.AppendQuoted(out[:start], string(text))
					}
					continue
				}
				b = b[:start]
			}
		}
		vb, err := json.Marshal(meta[k])
		if err != nil {
			vb, ok = []byte("null"), false
		}
		b = append(b, vb...)
	}
	return append(b, '}'), ok
}

// plainToken reports whether tok is a JSON string of printable ASCII with
// no escape: its text is its bytes within the quotes.
func plainToken(tok []byte) bool {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return false
	}
	for _, c := range tok[1 : len(tok)-1] {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// nilPointer reports whether v is a nil pointer, which encoding/json
// writes as null, not by its methods.
func nilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// ParseAnswer reads a JSON-RPC message from an upstream: what
// json.Unmarshal into a Message reads, for keys spelled exactly. Its
// Result is a copy; ID and Params are slices of js.
func ParseAnswer(js []byte, msg *Message) bool {
	return json.Valid(js) && parseMessage(js, msg, true, true)
}

// parseMessage reads a JSON-RPC message: its envelope (jsonrpc, id,
// method, params), and for an answer its result (a copy when copyResult,
// else a slice of js) and error, where a null method is no method.
func parseMessage(js []byte, msg *Message, answer, copyResult bool) bool {
	ok := true
	if !jsonscan.Members(js, func(key, value []byte) {
		switch string(key) {
		case `"jsonrpc"`:
			if string(value) == `"2.0"` {
				msg.JSONRPC = "2.0" // every message's: no copy
			} else {
				msg.JSONRPC, _ = jsonscan.Unquote(value)
			}
		case `"id"`:
			msg.ID = value
		case `"method"`:
			if !answer || string(value) != "null" {
				if m, known := commonMethod(value); known {
					msg.Method = m
				} else {
					msg.Method, ok = jsonscan.Unquote(value)
				}
			}
		case `"params"`:
			msg.Params = value
		case `"result"`:
			if answer {
				msg.Result = value
				if copyResult {
					msg.Result = bytes.Clone(value)
				}
			}
		case `"error"`:
			if answer {
				msg.Error = nil
				if string(value) != "null" {
					msg.Error = new(jsonrpc.Error)
					if json.Unmarshal(value, msg.Error) != nil {
						ok = false
					}
				}
			}
		}
	}) {
		return false
	}
	return ok
}

// Parse reads a tool result as json.Unmarshal would into r.
func (r *Result) Parse(js []byte) error {
	if !json.Valid(js) {
		return ErrNotObject
	}
	return r.ParseValid(js)
}

// ParseValid is Parse for js known to be valid JSON: the Result of a
// message ParseAnswer (or ReadSSE) read, which it validated with the
// rest of the answer. The answer is checked once, not twice.
func (r *Result) ParseValid(js []byte) error {
	if string(bytes.TrimSpace(js)) == "null" {
		return nil
	}
	var err error
	if !jsonscan.Members(js, func(key, value []byte) {
		switch string(key) {
		case `"content"`:
			if r.Content == nil {
				r.Content = r.one[:0]
			}
			r.Content = r.Content[:0]
			if string(value) == "null" {
				r.Content = nil
				return
			}
			if value[0] != '[' {
				err = ErrNotObject
				return
			}
			for i := jsonscan.SkipSpace(value, 1); i < len(value) && value[i] != ']'; {
				e := jsonscan.SkipValue(value, i)
				if c := value[i:e]; string(c) != "null" { // a null is no content
					r.Content = append(r.Content, json.RawMessage(c))
				}
				i = jsonscan.SkipSpace(value, e)
				if i < len(value) && value[i] == ',' {
					i = jsonscan.SkipSpace(value, i+1)
				}
			}
		case `"structuredContent"`:
			r.StructuredContent = json.RawMessage(value)
		case `"isError"`:
			switch string(value) {
			case "true":
				r.IsError = true
			case "false", "null":
				r.IsError = false
			default:
				err = ErrNotObject
			}
		}
	}) {
		return ErrNotObject
	}
	return err
}

// ContentText reads a content's type and text, as json.Unmarshal into a
// struct of two strings would; ok is false where it would fail.
func ContentText(c []byte) (typ, text string, ok bool) { return contentText(c, false) }

// contentText is ContentText; with view, a text of printable ASCII with
// no escape (what Unquote would copy unchanged) is a view of c.
func contentText(c []byte, view bool) (typ, text string, ok bool) {
	typ, text, _, ok = contentTextToken(c, view)
	return typ, text, ok
}

// contentTextToken is contentText that also returns the text's JSON
// token (its quotes included) when the text is a view of it (view, and
// a token of printable ASCII without an escape); else tok is nil.
func contentTextToken(c []byte, view bool) (typ, text string, tok []byte, ok bool) {
	ok = true
	if string(c) == "null" {
		return "", "", nil, true
	}
	if !jsonscan.Members(c, func(key, value []byte) {
		if string(key) != `"type"` && string(key) != `"text"` {
			return
		}
		var s string
		var viewed []byte // the token s is a view of
		good := true
		switch string(value) {
		case "null":
		case `"text"`:
			s = "text" // the common type: no copy
		default:
			if view && string(key) == `"text"` && plainToken(value) {
				s, viewed = strview.Of(value[1:len(value)-1]), value
				break
			}
			s, good = jsonscan.Unquote(value)
		}
		if string(key) == `"type"` {
			typ = s
		} else {
			text, tok = s, viewed // the last "text" key's, as encoding/json reads it
		}
		ok = ok && good
	}) {
		return "", "", nil, false
	}
	return typ, text, tok, ok
}
