// Package mcpwire reads and writes the one MCP message that matters for
// speed, tools/call over Streamable HTTP, without the go-sdk's decoder. The
// SDK decodes every message with a JSON decoder that allocates a large
// buffer per call; through a gateway that cost is paid twice more per call
// (as server and as client) than on a direct call. This package holds the
// gateway's fast path for both sides:
//
//   - the JSON: a request's envelope and params (ParseEnvelope,
//     ParseCallParams), an upstream's answer and its tool result
//     (ParseAnswer, Result), the tool result the gateway answers with
//     (AppendToolResult, WriteResponse) and the tools/call it sends
//     (AppendCall);
//   - the HTTP/1.1 exchange with a plain-HTTP upstream, on pooled
//     keep-alive connections read on the calling goroutine (Conns);
//   - the SSE answer of an upstream, with its event ids for resuming a
//     closed stream (ReadSSE, SSECursor).
//
// It speaks the same protocol as the SDK; its callers (internal/front and
// internal/upstream) fall back to the SDK on anything it does not read.
package mcpwire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/strview"
	"github.com/agentreach/reach/internal/traceparent"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Headers and protocol versions of Streamable HTTP.
const (
	HeaderSession  = "Mcp-Session-Id"
	HeaderProtocol = "Mcp-Protocol-Version"
	// StatelessProtocol is the first protocol version without sessions.
	StatelessProtocol = "2026-07-28"
	// SessionProtocol is the last protocol version with sessions: the one
	// upstream HTTP sessions ask for, so that the wire client can use them.
	SessionProtocol = "2025-11-25"
)

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// GetBuffer returns an empty buffer from the package's pool; give it back
// with PutBuffer.
func GetBuffer() *bytes.Buffer {
	b := bufPool.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// PutBuffer gives a buffer back to the pool.
func PutBuffer(b *bytes.Buffer) { bufPool.Put(b) }

// Message is the part of a JSON-RPC message the fast paths read.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// CallParams is the part of tools/call params the gateway reads; the
// arguments stay raw until the runtime validates them.
type CallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      mcp.Meta        `json:"_meta,omitempty"`
	// RawMeta is the _meta object as sent, a slice of the params
	// ParseCallParams read (nil when there is none), which it reads in
	// place of Meta.
	RawMeta json.RawMessage `json:"-"`
}

// ReadMessage reads a request's body into buf and its JSON-RPC envelope.
// body is nil when reading failed (the error is answered); ok is false for
// a body the fast path does not take (invalid JSON, a batch, not JSON-RPC
// 2.0), which goes to the SDK as it is.
func ReadMessage(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) (body []byte, msg Message, ok bool) {
	if !readBody(w, r, buf) {
		return nil, msg, false
	}
	body = buf.Bytes()
	ok = json.Valid(body) && ParseEnvelope(body, &msg) && msg.JSONRPC == "2.0"
	return body, msg, ok
}

// readBody reads a request's body into buf, or answers the error and
// reports false.
func readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) bool {
	buf.Reset()
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpjson.WriteError(w, http.StatusRequestEntityTooLarge, "body_too_large",
				fmt.Sprintf("The request body is larger than %d bytes.", mbe.Limit), "Send a smaller message.")
			return false
		}
		httpjson.WriteError(w, http.StatusBadRequest, "bad_body", "Reading the request body failed.", "Send it again.")
		return false
	}
	return true
}

// RequestID reports whether id (valid JSON) is a JSON-RPC request id the
// SDK takes: a string or an integer. The fast path leaves anything else
// (null, a fraction, an object) to the SDK, which refuses it.
func RequestID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return true
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 { // an int64
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// MangledID reports whether id (valid JSON) is a number the SDK answers
// with another: one whose value is not an integer of at most 2^53 in
// magnitude. The SDK reads a number id as a float64 and answers with it as
// an int64, so 1.5 comes back as 1 and 1234567890123456789 as
// 1234567890123456768: a client that matches answers by id never sees the
// one to its call, which ran all the same. Strings, null, objects and the
// like are the SDK's to answer (or refuse) as they are.
func MangledID(id []byte) bool {
	if len(id) == 0 || id[0] != '-' && (id[0] < '0' || id[0] > '9') {
		return false
	}
	if n := len(id); RequestID(id) && (n <= 15 || n == 16 && id[0] == '-') { // 15 digits: below 2^53
		return false
	}
	var r big.Rat
	if _, ok := r.SetString(string(id)); !ok || !r.IsInt() {
		return true
	}
	return PastFloat(r.Num())
}

// PastFloat reports whether the integer n is larger in magnitude than a
// float64 holds exactly (2^53): an SDK that reads a number id as a float64
// answers it as another.
func PastFloat(n *big.Int) bool { return n.CmpAbs(maxExactID) > 0 }

// maxExactID is the largest integer magnitude a float64 holds exactly.
var maxExactID = new(big.Int).Lsh(big.NewInt(1), 53)

var (
	contentTypeJSON = []string{"application/json"}
	contentTypeSSE  = []string{"text/event-stream"}
)

// WriteResponse writes a JSON-RPC response as an application/json answer:
// the error if rpcErr is not nil, else the result.
func WriteResponse(w http.ResponseWriter, id json.RawMessage, result any, rpcErr *jsonrpc.Error) {
	buf := GetBuffer()
	defer PutBuffer(buf)
	AppendResponse(buf, id, result, rpcErr)
	h := w.Header()
	h["Content-Type"] = contentTypeJSON // shared: net/http copies it when it writes the head
	h["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}

// AppendResponse appends a JSON-RPC response, a line of JSON, to buf: the
// error if rpcErr is not nil, else the result.
func AppendResponse(buf *bytes.Buffer, id json.RawMessage, result any, rpcErr *jsonrpc.Error) {
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	if rpcErr != nil {
		buf.WriteString(`,"error":`)
		b, _ := json.Marshal(rpcErr)
		buf.Write(b)
	} else {
		buf.WriteString(`,"result":`)
		var written bool
		switch tr := result.(type) {
		case *mcp.CallToolResult:
			written = appendToolResult(buf, tr, false)
		case CompleteResult:
			written = appendToolResult(buf, tr.CallToolResult, true)
		}
		if !written {
			b, err := json.Marshal(result)
			if err != nil {
				b = []byte(`{"content":[{"type":"text","text":"reach could not encode the result"}],"isError":true}`)
			}
			buf.Write(b)
		}
	}
	buf.WriteString("}\n")
}

// WriteEmptyStream answers with an SSE stream that ends at once: the
// answer to a request the client cancelled, which gets no response.
func WriteEmptyStream(w http.ResponseWriter) {
	w.Header()["Content-Type"] = contentTypeSSE
	w.WriteHeader(http.StatusOK)
}

// AppendCall appends the tools/call request id (a JSON value) of the tool
// name with args (raw JSON, or nothing) and meta (string values).
func AppendCall(b, id []byte, name string, args json.RawMessage, meta map[string]any) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":"tools/call","params":{"name":`...)
	b = jsonscan.AppendQuoted(b, name)
	if len(args) > 0 {
		b = append(b, `,"arguments":`...)
		b = append(b, args...)
	}
	if len(meta) > 0 {
		b = append(b, `,"_meta":`...)
		b, _ = appendMeta(b, meta) // a value it cannot encode is null
	}
	return append(b, `}}`...)
}

// CallLink is the _meta of a tools/call that links it to the call it is
// made for: AppendCallLink writes it without a map. An empty field is
// left out.
type CallLink struct {
	ProgressToken  string // progressToken
	IdempotencyKey string // reach/idempotency_key
	Parent         string // reach/parent: the frame's id
	Request        string // reach/request
	Traceparent    string // traceparent: the frame's span

	// With Spanned, the frame Span in trace TraceID gives reach/parent
	// and traceparent when Parent and Traceparent are empty: written as
	// link.FrameLink spells them, with no string made for them.
	Spanned bool
	Span    uint64
	TraceID [16]byte
}

// AppendCallLink is AppendCall with the _meta l, its keys in the order
// appendMeta sorts them.
func AppendCallLink(b, id []byte, name string, args json.RawMessage, l *CallLink) []byte {
	b = AppendCall(b, id, name, args, nil)
	b = b[:len(b)-len(`}}`)]
	sep := `,"_meta":{`
	key := func(k string) {
		b = append(append(b, sep...), k...)
		sep = ","
	}
	str := func(k, v string) {
		if v != "" {
			key(k)
			b = jsonscan.AppendQuoted(b, v)
		}
	}
	str(`"progressToken":`, l.ProgressToken)
	str(`"reach/idempotency_key":`, l.IdempotencyKey)
	if l.Parent == "" && l.Spanned {
		var span [8]byte
		binary.BigEndian.PutUint64(span[:], l.Span)
		key(`"reach/parent":"`)
		b = append(hex.AppendEncode(b, span[:]), '"')
	} else {
		str(`"reach/parent":`, l.Parent)
	}
	str(`"reach/request":`, l.Request)
	if l.Traceparent == "" && l.Spanned {
		key(`"traceparent":"`)
		b = append(traceparent.Append(b, l.TraceID, l.Span), '"')
	} else {
		str(`"traceparent":`, l.Traceparent)
	}
	if sep == "," {
		b = append(b, '}')
	}
	return append(b, `}}`...)
}

// Result is a tool result as the wire client reads it.
type Result struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	IsError           bool              `json:"isError,omitempty"`

	one [1]json.RawMessage // Content's first backing (most results have one item): Parse allocates none for it

	// OnlyText is the text of the one content, as the upstream sent it
	// (not masked), when Text found it a text block: what the front
	// compares its rendering with (upstream.Kept), without reading the
	// block again. OnlyTextRead says it was.
	OnlyText     string
	OnlyTextRead bool
}

// Data turns the result into the call's data, as the upstream client does
// for the SDK's results: the structured content, else the text when every
// content is text (see TextData), else the content. red, if not nil,
// masks the text (see JoinTexts).
func (r *Result) Data(red *redact.Redactor) json.RawMessage {
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		return r.StructuredContent
	}
	if text, quoted, allText := r.text(red, true); allText {
		return textData(text, quoted)
	}
	b, _ := json.Marshal(r.Content)
	return b
}

// Text joins the text contents as JoinTexts does, and reports whether
// every content is text.
func (r *Result) Text(red *redact.Redactor) (string, bool) {
	text, _, all := r.text(red, false)
	return text, all
}

// text is Text; with view, a text of printable ASCII without an escape is
// a view of its content's bytes, not a copy: Data copies it into the
// call's data (TextData) and OnlyText is read while r, and so its
// content, is kept. (Text copies: its text may outlive r, in an error's
// message.) quoted is the JSON string token the text is a view of, when
// the text returned is that view itself (one text block, nothing masked):
// the token's bytes are r's, as a structured content's are.
func (r *Result) text(red *redact.Redactor, view bool) (_ string, quoted []byte, _ bool) {
	var texts []string
	all, lead := true, false
	for i, c := range r.Content {
		typ, text, tok, ok := contentTextToken(c, view)
		if !ok || typ != "text" {
			all = false
			continue
		}
		lead = lead || (i > 0 && len(texts) == 0)
		texts = append(texts, text)
		quoted = tok
	}
	if len(r.Content) == 1 && len(texts) == 1 {
		r.OnlyText, r.OnlyTextRead = texts[0], true // as sent: JoinTexts masks a copy
	}
	joined := JoinTexts(texts, lead, red)
	if len(texts) != 1 || len(quoted) < 2 || !strview.Is(joined, quoted[1:len(quoted)-1]) {
		quoted = nil // masked, led by a line break, or not the token's view
	}
	return joined, quoted, all
}

// TextData is a result's text as the call's data: the JSON it holds when
// it is a JSON object or array, else a JSON string.
func TextData(text string) json.RawMessage { return textData(text, nil) }

// textData is TextData; quoted, if not nil, is text as a JSON string
// token in memory already (`"` text `"`, no escape): the data is that
// token when TextData would write those bytes, not a copy of them.
func textData(text string, quoted []byte) json.RawMessage {
	if t := strings.TrimSpace(text); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		if b := []byte(t); json.Valid(b) {
			return b
		}
	}
	if plainText(text) {
		if quoted != nil {
			return quoted[:len(quoted):len(quoted)] // an append to the data copies
		}
		b := make([]byte, 0, len(text)+2)
		return append(append(append(b, '"'), text...), '"')
	}
	// As json.Marshal writes it, byte for byte, without its reflection.
	return jsonscan.AppendQuoted(make([]byte, 0, len(text)+len(text)/8+8), text)
}

// plainText reports whether json.Marshal writes s as it is, in quotes:
// printable ASCII without a quote, a backslash or one of the characters
// it escapes for HTML.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// JoinTexts joins the texts of one result's content blocks, each on a line
// of its own (after a line break if lead, when the first content was not
// text). red, if not nil, masks them first as their concatenation would be
// masked (D7): a secret that one block ends and the next begins is
// masked, which the joined text, with a line break inside the secret, no
// longer shows a redactor.
func JoinTexts(texts []string, lead bool, red *redact.Redactor) string {
	if red != nil {
		texts = red.Blocks(texts)
	}
	s := strings.Join(texts, "\n")
	if lead && len(texts) > 0 {
		s = "\n" + s
	}
	return s
}
