package loops

import (
	"bytes"
	"encoding/json"
	"strings"
)

// maxExceptionBytes bounds the results read for an exception printed as
// the answer: a traceback is a few kilobytes; a longer text is output
// with an error in it, not an error.
const maxExceptionBytes = 8 << 10

// exceptionAnswer reports whether a successful result is an exception
// handed back as the answer: a REPL, a notebook or a code runner that
// prints what the code raised as its output ("KeyError: 'Date'", a
// Python traceback ending in "NameError: name 'df' is not defined", a
// stack of "at ..." frames under "TypeError: ..."). Its one text (the
// result, or its only string beside numbers: a cell's execution count)
// ends in a line "Name: message" or "Name", Name ending in Error or
// Exception, and is that line alone or a traceback. Such an answer is a
// failure the tool did not type: the call failed, as an error result
// would have said.
func exceptionAnswer(b []byte) bool {
	if len(b) < 7 || len(b) > maxExceptionBytes ||
		!bytes.Contains(b, []byte("Error")) && !bytes.Contains(b, []byte("Exception")) {
		return false
	}
	var buf [8]leaf
	sc := scanLeaves(b, buf[:0], len(buf), false)
	if sc.cut {
		return false
	}
	var text []byte
	for i := range sc.out {
		switch {
		case sc.out[i].kind == leafLiteral:
			return false // a flag beside it ("ok": true) says how the call went
		case sc.out[i].kind != leafString:
		case text != nil:
			return false // more than one text: an answer that holds an error, not one
		default:
			text = sc.out[i].raw
		}
	}
	// A Python traceback ends in its exception; a stack of frames
	// ("at f (app.js:12:9)") follows it.
	lines, python, frames := 0, false, 0
	var first, last []byte
	for raw := text; len(raw) > 0; {
		end, next := lineEnd(raw)
		if l := trim(raw[:end]); len(l) > 0 {
			if lines == 0 {
				first = l
			}
			lines++
			last = l
			python = python || bytes.Contains(l, []byte("Traceback (most recent call last)"))
			if bytes.HasPrefix(l, []byte("at ")) && bytes.IndexByte(l, '(') > 0 {
				frames++
			}
		}
		raw = raw[next:]
	}
	switch {
	case lines == 1 || python:
		return exceptionLine(last)
	case frames == lines-1:
		return exceptionLine(first)
	}
	return false
}

// exceptionLine reports whether a line names an exception and what it
// says: "KeyError: 'Date'", "java.lang.IllegalStateException: closed",
// "StopIteration" is not one (it names no error).
func exceptionLine(l []byte) bool {
	i := 0
	for i < len(l) {
		c := l[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.') {
			break
		}
		i++
	}
	name := l[:i]
	if len(name) == 0 || !('A' <= name[0] && name[0] <= 'Z' || 'a' <= name[0] && name[0] <= 'z') ||
		!bytes.HasSuffix(name, []byte("Error")) && !bytes.HasSuffix(name, []byte("Exception")) {
		return false
	}
	if i == len(l) {
		// A name alone must say which error: "Error" alone is a word.
		return !bytes.Equal(name, []byte("Error")) && !bytes.Equal(name, []byte("Exception"))
	}
	return l[i] == ':' && (i+1 == len(l) || l[i+1] == ' ')
}

// apiErrorAnswer reports whether b, a successful answer, is an API's
// failure handed on as it came (a chat API's {"ok": false, "error":
// "not_in_channel"}, {"success": false, "error": {...}}): an object whose
// flag ok or success is false and whose error says something. The call
// failed, as an error result would have said; transient when its error
// says so (ratelimited, rate_limit_exceeded, too many requests, timeout,
// unavailable, overloaded, try again). Only small answers that hold both
// words are read whole.
func apiErrorAnswer(b []byte) (failed, transient bool) {
	top := falseFlagged(b, []byte(`"error"`), apiFlags)
	if top == nil {
		return false, false
	}
	return errorSays(top["error"])
}

// The flags of a failure in an answer's object, the first present read:
// an API's error (apiErrorAnswer), a refusal with its reasons
// (rejectedAnswer).
var (
	apiFlags    = []string{"ok", "success"}
	rejectFlags = []string{"accepted", "ok", "success"}
)

// falseFlagged decodes b, a small answer, when it is an object holding
// member (a quoted name) whose first flag of flags present is false; nil
// otherwise. Only answers that hold both words are read whole.
func falseFlagged(b, member []byte, flags []string) map[string]json.RawMessage {
	b = bytes.TrimSpace(b)
	if len(b) < 20 || len(b) > maxExceptionBytes || b[0] != '{' ||
		!bytes.Contains(b, []byte("false")) || !bytes.Contains(b, member) {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return nil
	}
	for _, f := range flags {
		if flag, ok := top[f]; ok {
			if string(bytes.TrimSpace(flag)) == "false" {
				return top
			}
			return nil
		}
	}
	return nil
}

// rpcErrorAnswer reports whether b, a successful answer, is a JSON-RPC 2.0
// error response handed on as it came ({"jsonrpc": "2.0", "id": 41,
// "error": {"code": -32000, "message": "nonce too low"}}): a node's or an
// MCP server's refusal of the call, which an error result would have
// said. Its complaint is its error member's message and data (complaint),
// the response's id and the error's code aside. Transient as
// apiErrorAnswer's, read in what the complaint says. b is decoded once,
// into the members read (TestRPCErrorAnswerDecodesOnce).
//
// So is an answer in JSON-RPC 1.0's shape, without the jsonrpc member: a
// result of null beside an error that says something, and nothing else
// but the response's id ({"result": null, "error": "cannot create note
// because it is a duplicate"}, as a desktop app's local API answers, or
// {"result": null, "error": {"message": ...}, "id": 7}): the error is its
// message.
func rpcErrorAnswer(b []byte) (complaint []byte, transient bool) {
	b = bytes.TrimSpace(b)
	if len(b) < 20 || len(b) > maxExceptionBytes || b[0] != '{' || !bytes.Contains(b, []byte(`"error"`)) {
		return nil, false
	}
	if !bytes.Contains(b, []byte(`"jsonrpc"`)) {
		return rpcOneErrorAnswer(b)
	}
	var top struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if json.Unmarshal(b, &top) != nil || top.Result != nil || top.Error == nil ||
		strings.TrimSpace(top.Error.Message) == "" {
		return nil, false
	}
	// The code (-32000) is the kind of error, as an HTTP status is, not a
	// thing the complaint names: left out, other transactions each not
	// found are a batch, as a tool's own "transaction not found" is
	// (TestReview27RPCErrorCodeNoThing).
	complaint, err := json.Marshal(top.Error)
	if err != nil {
		return nil, false
	}
	_, transient = errorSays(complaint)
	return complaint, transient
}

// rpcOneErrorAnswer is rpcErrorAnswer for an answer b without a jsonrpc
// member: JSON-RPC 1.0's shape, a result of null and an error (a text, or
// an object with a message), the response's id and nothing else beside
// them. The error's text is the complaint, as a message.
func rpcOneErrorAnswer(b []byte) (complaint []byte, transient bool) {
	if !bytes.Contains(b, []byte(`"result"`)) || !bytes.Contains(b, []byte("null")) {
		return nil, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil || len(top) > 3 || string(bytes.TrimSpace(top["result"])) != "null" {
		return nil, false
	}
	for k := range top {
		if k != "result" && k != "error" && k != "id" {
			return nil, false
		}
	}
	var e rpcError
	if err := json.Unmarshal(top["error"], &e.Message); err != nil {
		if json.Unmarshal(top["error"], &e) != nil {
			return nil, false
		}
	}
	if strings.TrimSpace(e.Message) == "" {
		return nil, false
	}
	complaint, err := json.Marshal(e)
	if err != nil {
		return nil, false
	}
	_, transient = errorSays(complaint)
	return complaint, transient
}

// rpcError is a JSON-RPC error member as rpcErrorAnswer reads it and
// writes its complaint: the message and data, the code left out.
type rpcError struct {
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// startFailedAnswer reports whether b, a write's successful answer, says
// the thing the write started failed at once: a top-level status or state
// of failed, failure, error, errored or aborted beside an error that says
// something (error, error_msg, error_message, at the top or under result;
// a text or an object), as a prediction or a robot's goal answers when it
// ran and failed before the answer came back. The write changed nothing
// it says, and its complaint is that error (complaint): the new job's id
// and clock are not the complaint. Only a write's answer is read so: a
// read that answers a job's status of failed tells of that job, and has
// not failed itself; so does a write on a job that failed before it (it
// archives or cancels it), whose answer names that job by an id of the
// call's arguments args (TestReview27WriteOnAFailedJob). Transient as
// apiErrorAnswer's.
func startFailedAnswer(b, args []byte) (complaint []byte, transient bool) {
	b = bytes.TrimSpace(b)
	if len(b) < 20 || len(b) > maxExceptionBytes || b[0] != '{' || !bytes.Contains(b, []byte(`rror`)) {
		return nil, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return nil, false
	}
	var st string
	for _, k := range [...]string{"status", "state"} {
		if json.Unmarshal(top[k], &st) == nil && st != "" {
			break
		}
	}
	switch strings.ToLower(st) {
	case "failed", "failure", "error", "errored", "aborted":
	default:
		return nil, false
	}
	if namesArgID(top, args) {
		return nil, false
	}
	var res map[string]json.RawMessage
	_ = json.Unmarshal(top["result"], &res)
	for _, m := range []map[string]json.RawMessage{top, res} {
		for _, k := range [...]string{"error", "error_msg", "error_message", "errorMessage"} {
			if f, t := errorSays(m[k]); f {
				return m[k], t
			}
		}
	}
	return nil, false
}

// errorSays reports whether e, an answer's error member, says something
// (a text or an object, not null, "" or {}), and whether what it says is
// transient.
func errorSays(e json.RawMessage) (failed, transient bool) {
	e = bytes.TrimSpace(e)
	if len(e) == 0 || string(e) == "null" || string(e) == `""` || string(e) == "{}" {
		return false, false
	}
	var buf [96]byte
	m := buf[:0]
	for _, c := range e[:min(len(e), 256)] {
		switch {
		case 'A' <= c && c <= 'Z':
			m = append(m, c+'a'-'A')
		case 'a' <= c && c <= 'z':
			m = append(m, c)
		}
		if len(m) == cap(m) {
			break
		}
	}
	for _, w := range [...]string{"ratelimit", "toomanyrequests", "timeout", "timedout", "unavailable", "overloaded", "tryagain"} {
		if bytes.Contains(m, []byte(w)) {
			return true, true
		}
	}
	return true, false
}

// namesArgID reports whether the answer top names its thing by an id
// (id, or a key ending in _id or Id, a text or a number) that the call's
// arguments args hold: the answer is of a thing the call named, which was
// there before it.
func namesArgID(top map[string]json.RawMessage, args []byte) bool {
	for k, v := range top {
		if k != "id" && !strings.HasSuffix(k, "_id") && !strings.HasSuffix(k, "Id") && !strings.HasSuffix(k, "ID") {
			continue
		}
		v = bytes.TrimSpace(v)
		if len(v) < 2 || v[0] != '"' && !isDigit(v[0]) {
			continue
		}
		if v[0] != '"' {
			v = append([]byte{':'}, v...) // a number, as the arguments give it to a key
		}
		if bytes.Contains(args, v) || v[0] == ':' && bytes.Contains(args, append([]byte{':', ' '}, v[1:]...)) {
			return true
		}
	}
	return false
}

// mcpErrorAnswer reports whether b, a successful answer, is an MCP tool's
// result with isError set, handed on as it came (a framework that wraps an
// MCP server's CallToolResult as its own answer: {"content": [{"type":
// "text", "text": "Error: invalid sequence"}], "isError": true}). The
// server said the call failed, as an error result would have; its
// complaint is the text of its text blocks, one a line, as a message.
// Only an object of content, isError, structuredContent and _meta is
// read so, and only when a text block says something; transient as
// apiErrorAnswer's.
func mcpErrorAnswer(b []byte) (complaint []byte, transient bool) {
	b = bytes.TrimSpace(b)
	if len(b) < 20 || len(b) > maxExceptionBytes || b[0] != '{' || !bytes.Contains(b, []byte(`"isError"`)) {
		return nil, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil || string(bytes.TrimSpace(top["isError"])) != "true" {
		return nil, false
	}
	for k := range top {
		switch k {
		case "content", "isError", "structuredContent", "_meta":
		default:
			return nil, false
		}
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(top["content"], &blocks) != nil {
		return nil, false
	}
	var texts []string
	for _, bl := range blocks {
		if bl.Type == "text" && strings.TrimSpace(bl.Text) != "" {
			texts = append(texts, bl.Text)
		}
	}
	if len(texts) == 0 {
		return nil, false
	}
	complaint, err := json.Marshal(rpcError{Message: strings.Join(texts, "\n")})
	if err != nil {
		return nil, false
	}
	_, transient = errorSays(complaint)
	return complaint, transient
}

// rejectedAnswer reports whether b, a successful answer, says the call
// was not accepted and lists why: an object whose flag accepted, ok or
// success is false beside a non-empty list of errors ({"accepted": false,
// "errors": [{"path": "slug", "message": "slug is taken"}], "trace":
// "..."}: a CMS's or a form API's validation handed back with a 200). Its
// complaint is that list, the answer's ids and clock around it left out;
// transient as apiErrorAnswer's (TestRejectedAnswer).
func rejectedAnswer(b []byte) (complaint []byte, transient bool) {
	top := falseFlagged(b, []byte(`"errors"`), rejectFlags)
	if top == nil {
		return nil, false
	}
	var errs []json.RawMessage
	if json.Unmarshal(top["errors"], &errs) != nil || len(errs) == 0 {
		return nil, false
	}
	complaint = bytes.TrimSpace(top["errors"])
	_, transient = errorSays(complaint)
	return complaint, transient
}
