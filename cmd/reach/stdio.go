package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/names"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's stdio transport ends the session at the first line it cannot
// read (not JSON, not a JSON-RPC message, a batch where the protocol has
// none): one malformed line from a client would stop `reach stdio`. So
// stdin goes through stdioLines first, which passes on the lines the SDK
// reads and answers each other one with a JSON-RPC error, as a server
// should, and goes on.

// Bounds the SDK reads a message within.
const (
	maxStdioLine  = mcp.DefaultMaxLineLength
	maxStdioDepth = 1000
)

// At the end of stdin the SDK ends the session at once, and the answers to
// the requests it has read and not yet answered are never written: a client
// that writes its requests and closes stdin (echo ... | reach stdio, a
// script, a harness) got no answer, where the reference servers answer
// each. So with finish set, stdioLines passes the end on only once every
// request it passed on is answered (or cancelled by the client), or the
// session is closed (a signal).

// batchProtocols are the protocol versions with JSON-RPC batches.
var batchProtocols = []string{"2024-11-05", "2025-03-26"}

// stdioOut is stdout: it serializes writes (the SDK writes each message
// in one Write, and stdioLines writes its error answers between them), and
// tells stdioLines which batches were answered.
type stdioOut struct {
	mu    sync.Mutex
	w     io.Writer
	lines *stdioLines
}

func (o *stdioOut) Write(p []byte) (int, error) {
	if len(p) > 0 && p[0] == '[' { // the SDK answers a batch in one array
		o.lines.answered(p)
	}
	o.mu.Lock()
	n, err := o.w.Write(p)
	o.mu.Unlock()
	if o.lines.finish && len(p) > 0 { // once written: the end of stdin may be passed on
		o.lines.written(p)
	}
	return n, err
}

func (*stdioOut) Close() error { return nil }

// stdioLines reads JSON-RPC messages, one a line, for the SDK's stdio
// transport. Safe for one reader.
type stdioLines struct {
	r       *bufio.Reader
	closer  io.Closer // stdin's, if it has one
	out     io.Writer
	log     *slog.Logger
	line    int    // the number of the last line read
	pending []byte // what the SDK has yet to read of a good line
	batches bool   // the client asked, at initialize, for a protocol with batches
	err     error  // the reader's, once it has no more lines
	finish  bool   // at the end of stdin, wait for the answers to the requests passed on

	mu      sync.Mutex
	open    map[jsonrpc.ID]bool // ids of batched requests not answered yet
	waiting map[jsonrpc.ID]bool // ids of requests passed on and not answered yet (with finish)
	idle    []chan struct{}     // closed when waiting empties (finishAnswers, drain)
	closed  chan struct{}       // closed by Close
	once    sync.Once
}

// stdioPipes returns stdin and stdout for the SDK's IOTransport.
func stdioPipes(in io.Reader, out io.Writer, log *slog.Logger) (*stdioLines, *stdioOut) {
	s := &stdioLines{r: bufio.NewReaderSize(in, 64<<10), log: log, open: map[jsonrpc.ID]bool{}, waiting: map[jsonrpc.ID]bool{}, closed: make(chan struct{})}
	s.closer, _ = in.(io.Closer)
	o := &stdioOut{w: out, lines: s}
	s.out = o
	return s, o
}

// answered forgets the ids of a batch's answers (an array the SDK writes).
func (s *stdioLines) answered(p []byte) {
	var raws []json.RawMessage
	if json.Unmarshal(p, &raws) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, raw := range raws {
		if msg, err := jsonrpc.DecodeMessage(raw); err == nil {
			if r, ok := msg.(*jsonrpc.Response); ok {
				delete(s.open, r.ID)
			}
		}
	}
}

// Read implements io.Reader: the lines that are messages, each ending in a
// newline.
func (s *stdioLines) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.err != nil {
			s.finishAnswers()
			return 0, s.err
		}
		line, err := s.next()
		if err != nil {
			s.err = err
		}
		if line != nil {
			s.pending = s.check(line)
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	return n, nil
}

// Close closes stdin, which ends a Read blocked on it where the system
// allows.
func (s *stdioLines) Close() error {
	s.once.Do(func() { close(s.closed) })
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

// errLongLine marks a line longer than maxStdioLine, read to its end and
// dropped.
var errLongLine = errors.New("line too long")

// next reads the next line, without its newline; a line longer than
// maxStdioLine is read to its end and returned as nil with s.line counted,
// after answering it. The last line may end without a newline.
func (s *stdioLines) next() ([]byte, error) {
	var buf []byte
	long := false
	for {
		chunk, err := s.r.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > maxStdioLine+1 {
				long, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(chunk) > 0 || len(buf) > 0 {
			s.line++
		}
		if long {
			s.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("line %d is longer than %d bytes; send a smaller message", s.line, maxStdioLine))
			return []byte{}, err
		}
		if err != nil && len(buf) == 0 {
			return nil, err
		}
		return bytes.TrimRight(buf, "\r\n"), err
	}
}

// check returns a line the SDK reads, with its newline, or nil after
// answering one it does not.
func (s *stdioLines) check(line []byte) []byte {
	line = bytes.TrimSpace(line)
	switch {
	case len(line) == 0:
		return nil
	case !json.Valid(line):
		s.refuse(nil, jsonrpc.CodeParseError, fmt.Sprintf("line %d is not JSON; send one JSON-RPC message per line", s.line))
		return nil
	case tooDeep(line, maxStdioDepth):
		s.refuse(nil, jsonrpc.CodeParseError, fmt.Sprintf("line %d is nested more than %d deep", s.line, maxStdioDepth))
		return nil
	case line[0] == '[':
		if msg := s.checkBatch(line); msg != "" {
			s.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("line %d: %s", s.line, msg))
			return nil
		}
	default:
		if id := requestID(line); mcpwire.MangledID(id) {
			// The SDK would run it and answer under another id, which
			// its client never matches.
			s.refuse(id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("line %d: reach cannot answer under this id, it would come back changed (an id is read as a 64-bit float); "+
				"send it again with a string id or an integer id of at most 2^53", s.line))
			return nil
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			s.refuse(requestID(line), jsonrpc.CodeInvalidRequest,
				fmt.Sprintf(`line %d is not a JSON-RPC 2.0 message (%v); send {"jsonrpc": "2.0", "id": 1, "method": "...", "params": {...}}`, s.line, err))
			return nil
		}
		if req, ok := msg.(*jsonrpc.Request); ok && !req.ID.IsValid() && nullID(line) {
			// The SDK would run it as a notification, and its client would
			// wait for the answer for ever.
			s.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("line %d: a request's id must not be null; send it again with a string or an integer id (or without id, for a notification)", s.line))
			return nil
		}
		s.passing(msg)
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" {
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(req.Params, &p)
			s.batches = slices.Contains(batchProtocols, p.ProtocolVersion)
		}
	}
	return append(line, '\n')
}

// checkBatch says what is wrong with a batch the SDK would stop on, or "".
func (s *stdioLines) checkBatch(line []byte) string {
	if !s.batches {
		return "batches are part of MCP " + names.List(batchProtocols, "and") + " only; send one message per line"
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil || len(raws) == 0 {
		return "an empty batch; send at least one message"
	}
	// The SDK refuses, and ends the session on, an id twice in a batch or
	// one of an earlier batch not answered yet.
	var ids []jsonrpc.ID
	for i, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return fmt.Sprintf("message %d of the batch is not a JSON-RPC 2.0 message (%v)", i+1, err)
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
			if slices.Contains(ids, req.ID) {
				return fmt.Sprintf("the batch has the id %v twice", req.ID.Raw())
			}
			ids = append(ids, req.ID)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if s.open[id] {
			return fmt.Sprintf("the id %v is of a batched request not answered yet; use another", id.Raw())
		}
	}
	for _, id := range ids {
		s.open[id] = true
		if s.finish {
			s.waiting[id] = true
		}
	}
	return ""
}

// passing notes a message passed on to the SDK: a request waits for its
// answer, and a client's cancel of one ends the wait, as no answer follows.
func (s *stdioLines) passing(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !s.finish || !ok {
		return
	}
	if req.ID.IsValid() {
		s.mu.Lock()
		s.waiting[req.ID] = true
		s.mu.Unlock()
		return
	}
	if req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
				s.answer(id)
			}
		}
	}
}

// written notes the answers in a message the SDK wrote: a response, or a
// batch of them.
func (s *stdioLines) written(p []byte) {
	type answer struct {
		ID     any             `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	var answers []answer
	if p[0] == '[' {
		json.Unmarshal(p, &answers)
	} else {
		var a answer
		if json.Unmarshal(p, &a) == nil {
			answers = append(answers, a)
		}
	}
	for _, a := range answers {
		if a.Method != nil {
			continue // a request of the server's
		}
		if id, err := jsonrpc.MakeID(a.ID); err == nil && id.IsValid() {
			s.answer(id)
		}
	}
}

// answer ends the wait for request id.
func (s *stdioLines) answer(id jsonrpc.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiting, id)
	if len(s.waiting) == 0 {
		for _, c := range s.idle {
			close(c)
		}
		s.idle = nil
	}
}

// drain waits, with finish, until every request passed on is answered, or
// until stop or the session's close.
func (s *stdioLines) drain(stop <-chan struct{}) {
	s.mu.Lock()
	if !s.finish || len(s.waiting) == 0 {
		s.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	s.idle = append(s.idle, idle)
	s.mu.Unlock()
	select {
	case <-idle:
	case <-stop:
	case <-s.closed:
	}
}

// finishAnswers waits, with finish, until every request passed on is
// answered, or the session is closed.
func (s *stdioLines) finishAnswers() {
	s.mu.Lock()
	if !s.finish || len(s.waiting) == 0 {
		s.mu.Unlock()
		return
	}
	n := len(s.waiting)
	s.mu.Unlock()
	s.log.Info("stdin ended; answering the requests in flight before the session ends", "requests", n)
	s.drain(nil)
}

// refuse answers a line the server does not read with a JSON-RPC error
// (id null when the line's own cannot be read) and logs it.
func (s *stdioLines) refuse(id json.RawMessage, code int64, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	e, _ := json.Marshal(&jsonrpc.Error{Code: code, Message: msg})
	fmt.Fprintf(s.out, `{"jsonrpc":"2.0","id":%s,"error":%s}`+"\n", id, e)
	s.log.Warn("a line from the client is not a message; answered with an error and skipped", "line", s.line, "code", code)
}

// nullID reports whether a message's id member is there and null.
func nullID(line []byte) bool {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	return json.Unmarshal(line, &probe) == nil && string(probe.ID) == "null"
}

// requestID returns the id of a JSON object that has a string or number
// one, else nil.
func requestID(line []byte) json.RawMessage {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &probe) != nil || len(probe.ID) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(probe.ID, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return probe.ID
	}
	return nil
}

// tooDeep reports whether the JSON in b nests objects and arrays more than
// max deep.
func tooDeep(b []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}
