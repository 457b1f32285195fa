package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agentreach/reach/internal/redact"
)

// FuzzJSON checks the hand-written JSON readers against encoding/json on
// the same bytes: the upstream answer (ParseAnswer), the tool result
// (Result.Parse) and a content's type and text (ContentText) read what
// json.Unmarshal reads, wherever both accept the input and no key is
// spelled in another case (which encoding/json would also take and the
// wire readers leave to the SDK).
func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"reach-1","result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":"a\u00e9\n"}],"structuredContent":{"a":[1,2]},"isError":true}`,
		`{"content":null,"isError":null}`, `{"type":"text","text":null}`, `{"id":null,"method":null,"result":null,"error":null}`,
		`null`, `[]`, `{"content":[ ]}`, `{"content":[null,{"type":"text","text":"a"}, null ]}`, `{ "type" : "text" , "text" : "\"q\"" }`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || caseVariantKey(data) {
			return
		}
		// ParseAnswer vs a Message.
		var lean, std Message
		if ParseAnswer(data, &lean) && json.Unmarshal(data, &std) == nil {
			if lean.JSONRPC != std.JSONRPC || lean.Method != std.Method ||
				!sameRaw(lean.ID, std.ID) || !sameRaw(lean.Params, std.Params) || !sameRaw(lean.Result, std.Result) ||
				(lean.Error == nil) != (std.Error == nil) || (lean.Error != nil && (lean.Error.Code != std.Error.Code ||
				lean.Error.Message != std.Error.Message || !sameRaw(lean.Error.Data, std.Error.Data))) {
				t.Fatalf("ParseAnswer(%s) = %+v, encoding/json %+v", data, lean, std)
			}
		}
		// Result.Parse vs a Result.
		var lr, sr Result
		if lr.Parse(data) == nil && json.Unmarshal(data, &sr) == nil {
			// A null among the content blocks is no block: Parse drops it.
			sr.Content = slices.DeleteFunc(sr.Content, func(c json.RawMessage) bool { return string(c) == "null" })
			if lr.IsError != sr.IsError || !sameRaw(lr.StructuredContent, sr.StructuredContent) || len(lr.Content) != len(sr.Content) {
				t.Fatalf("Result.Parse(%s) = %+v, encoding/json %+v", data, lr, sr)
			}
			for i := range lr.Content {
				if !sameRaw(lr.Content[i], sr.Content[i]) {
					t.Fatalf("content %d of %s: %s vs %s", i, data, lr.Content[i], sr.Content[i])
				}
			}
		}
		// ContentText vs a struct of two strings.
		var c struct{ Type, Text string }
		typ, text, ok := ContentText(data)
		if err := json.Unmarshal(data, &c); ok != (err == nil) && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) || ok && err == nil && (typ != c.Type || text != c.Text) {
			t.Fatalf("ContentText(%s) = %q %q %v, encoding/json %q %q %v", data, typ, text, ok, c.Type, c.Text, err)
		}
	})
}

// sameRaw compares two raw JSON values as encoding/json keeps them (a
// missing value and null are both empty or "null").
func sameRaw(a, b []byte) bool {
	norm := func(x []byte) string {
		if s := strings.TrimSpace(string(x)); s != "null" {
			return s
		}
		return ""
	}
	return norm(a) == norm(b)
}

var jsonKeyRE = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*:`)

// caseVariantKey reports whether data has a key that equals one of the
// fields the readers know only when case is ignored, or has escapes in a
// key (which encoding/json decodes and the lean readers compare as written).
func caseVariantKey(data []byte) bool {
	for _, m := range jsonKeyRE.FindAllSubmatch(data, -1) {
		k := string(m[1])
		if strings.Contains(k, `\`) {
			return true
		}
		for _, known := range []string{"jsonrpc", "id", "method", "params", "result", "error", "content", "structuredContent", "isError", "type", "text", "code", "message", "data"} {
			if k != known && strings.EqualFold(k, known) {
				return true
			}
		}
	}
	return false
}

// FuzzReadSSE feeds the SSE reader any stream as a call's answer: it never
// panics; what it returns is the message it was asked for (and nothing
// else); a stream it calls resumable had an event id; the id it would
// resume from is bounded and has no NUL. A stream read with its line
// feeds turned into CR LF or lone CRs (the other line endings the format
// allows) reads the same.
func FuzzReadSSE(f *testing.F) {
	for _, s := range []string{
		"event: message\nid: s1_1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"reach-1\",\"result\":{\"content\":[]}}\n\n",
		"id: s1_0\nretry: 500\ndata:\n\n",
		"id: s1_0\ndata:\n\nid:\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":1}}\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"reach-1\",\"error\":{\"code\":1,\"message\":\"m\"}}\r\n\r\n",
		"data: {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n\n: comment\nretry: x\n",
		"data: {\"jsonrpc\":\n" + "data: \"2.0\",\"id\":\"reach-1\",\"result\":{}}\n\n",
		"id: s1_1\rretry: 10\rdata: {\"jsonrpc\":\"2.0\",\"id\":\"reach-1\",\"result\":{}}\r\r",
		"data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":\"reach-1\",\"result\":{}}\r\n\r",
		"id: a\r\r\nid: b\n\r\n\r",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cur SSECursor
		msg, err := ReadSSE(bytes.NewReader(data), &cur, func(m *Message) bool { return m.Method == "" && string(m.ID) == `"reach-1"` })
		switch {
		case err == nil && (msg == nil || msg.Method != "" || string(msg.ID) != `"reach-1"`):
			t.Fatalf("ReadSSE returned %+v for another message", msg)
		case errors.Is(err, ErrStreamClosed) && cur.LastID == "":
			t.Fatal("a stream without an event id counts as resumable")
		}
		if len(cur.LastID) > MaxEventID || strings.IndexByte(cur.LastID, 0) >= 0 || cur.Retry < 0 {
			t.Fatalf("cursor %q retry %v", cur.LastID, cur.Retry)
		}
		if bytes.IndexByte(data, '\r') >= 0 {
			return
		}
		for _, eol := range []string{"\r\n", "\r"} {
			var c SSECursor
			m, e := ReadSSE(iotest.HalfReader(bytes.NewReader(bytes.ReplaceAll(data, []byte("\n"), []byte(eol)))), &c, func(m *Message) bool { return m.Method == "" && string(m.ID) == `"reach-1"` })
			if (m == nil) != (msg == nil) || m != nil && !bytes.Equal(m.Result, msg.Result) || fmt.Sprint(e) != fmt.Sprint(err) || c != cur {
				t.Fatalf("with line endings %q: %+v, %v, %+v; with LF %+v, %v, %+v", eol, m, e, c, msg, err, cur)
			}
		}
	})
}

// FuzzTextData checks that a text that is not JSON structure becomes the
// JSON string json.Marshal writes, the plain ones included.
func FuzzTextData(f *testing.F) {
	for _, s := range []string{"call 12", "a<b", `"q"`, "tab\there", "café", "", " {x", "\x7f", "a&b\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if b := bytes.TrimSpace([]byte(text)); len(b) > 0 && (b[0] == '{' || b[0] == '[') {
			return
		}
		want, _ := json.Marshal(text)
		if got := TextData(text); !bytes.Equal(got, want) {
			t.Errorf("TextData(%q) = %s, want %s", text, got, want)
		}
	})
}

// A plain text's data is one allocation.
func TestTextDataAllocations(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { TextData("call 12345, all fine") }); n > 1 {
		t.Errorf("TextData: %v allocations, want 1", n)
	}
}

// FuzzAppendCallLink checks that a call's link is written as AppendCall
// writes the same _meta as a map, empty fields left out.
func FuzzAppendCallLink(f *testing.F) {
	f.Add("t-1", "k", "00000000000000ab", "r1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00000000000000ab-01")
	f.Add("", "", "", "", "")
	f.Add("", "a\"b\\c\u2028", "", "é\x01", "")
	f.Fuzz(func(t *testing.T, token, key, parent, request, tp string) {
		l := CallLink{ProgressToken: token, IdempotencyKey: key, Parent: parent, Request: request, Traceparent: tp}
		meta := map[string]any{}
		for k, v := range map[string]string{"progressToken": token, "reach/idempotency_key": key,
			"reach/parent": parent, "reach/request": request, "traceparent": tp} {
			if v != "" {
				meta[k] = v
			}
		}
		args := json.RawMessage(`{"text":"hi"}`)
		want := AppendCall(nil, []byte(`"reach-1"`), "echo", args, meta)
		if got := AppendCallLink(nil, []byte(`"reach-1"`), "echo", args, &l); !bytes.Equal(got, want) {
			t.Errorf("AppendCallLink = %s\nwant %s", got, want)
		}
	})
}

// A text content's type and text are read with one allocation, the text's.
func TestContentTextAllocations(t *testing.T) {
	c := []byte(`{"type":"text","text":"call 12345","annotations":{"audience":["user"]}}`)
	if n := testing.AllocsPerRun(100, func() { ContentText(c) }); n > 1 {
		t.Errorf("ContentText: %v allocations, want 1", n)
	}
}

// A result of one content item is read without allocating: the item is a
// slice of the answer, in the result's own backing.
func TestResultParseAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates now and then on this path: measured without it")
	}
	js := []byte(`{"content":[{"type":"text","text":"call 12345"}],"isError":false}`)
	var r Result
	if n := testing.AllocsPerRun(100, func() { r = Result{}; r.Parse(js) }); n > 0 {
		t.Errorf("Result.Parse: %v allocations, want none", n)
	}
	if len(r.Content) != 1 || string(r.Content[0]) != `{"type":"text","text":"call 12345"}` {
		t.Errorf("content %q", r.Content)
	}
}

// FuzzContentTextView checks that a content's text read as a view (the
// call's data's way) is the text ContentText copies, type and verdict
// alike, and that a result's data made from the view is the data made
// from Text's copy, masked or not.
func FuzzContentTextView(f *testing.F) {
	for _, s := range []string{`{"type":"text","text":"call 12"}`, `{"type":"text","text":"a\"b"}`, `{"text":"café","type":"text"}`,
		`{"type":"text","text":"{\"a\":1}"}`, `{"type":"text","text":" [1]"}`, `{"type":"image","data":"x"}`, `{"type":"text","text":null}`,
		`{"type":"text","text":"key sk-fuzz-5f3a9c1e7d2b here"}`, `{"type":"text","text":"tab\there"}`, `null`, `{"type":"te\u0078t","text":"<b>"}`} {
		f.Add([]byte(s))
	}
	red, err := redact.New(nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := red.Add("sk-fuzz-5f3a9c1e7d2b"); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, c []byte) {
		if !json.Valid(c) {
			return
		}
		c = bytes.Clone(c)
		typ, text, ok := ContentText(c)
		vtyp, vtext, vok := contentText(c, true)
		if vtyp != typ || vtext != text || vok != ok {
			t.Fatalf("contentText(%s, view) = %q %q %v, ContentText = %q %q %v", c, vtyp, vtext, vok, typ, text, ok)
		}
		for _, r := range []*redact.Redactor{nil, red} {
			res := Result{Content: []json.RawMessage{c}}
			wantText, all := res.Text(r)
			wantOnly := res.OnlyText
			var want json.RawMessage
			if all {
				want = TextData(wantText)
			} else {
				want, _ = json.Marshal(res.Content)
			}
			got := Result{Content: []json.RawMessage{c}}
			if d := got.Data(r); !bytes.Equal(d, want) || got.OnlyText != wantOnly {
				t.Fatalf("Data(%s) = %s (only text %q), want %s (%q)", c, d, got.OnlyText, want, wantOnly)
			}
		}
	})
}

// A one-text result's data allocates nothing: its text, printable ASCII
// without an escape and not masked, is the content's JSON string token
// itself, a slice of the result's bytes (as a structured content is), not
// a copy (1 allocation when it was). An append to the data copies it: the
// result's bytes stay as they were. A masked text's data is a copy.
func TestResultDataAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates now and then on this path: measured without it")
	}
	js := []byte(`{"content":[{"type":"text","text":"call 12345"}],"isError":false}`)
	var r Result
	var d json.RawMessage
	if n := testing.AllocsPerRun(100, func() { r = Result{}; r.Parse(js); d = r.Data(nil) }); n > 0 {
		t.Errorf("Result.Data: %v allocations, want none", n)
	}
	if string(d) != `"call 12345"` || r.OnlyText != "call 12345" || !r.OnlyTextRead {
		t.Errorf("data %s, only text %q (%v)", d, r.OnlyText, r.OnlyTextRead)
	}
	_ = append(d, "xx"...)
	if string(js) != `{"content":[{"type":"text","text":"call 12345"}],"isError":false}` {
		t.Errorf("an append to the data wrote into the result's bytes: %s", js)
	}
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := red.Add("sk-data-5f3a9c1e7d2b"); err != nil {
		t.Fatal(err)
	}
	js = []byte(`{"content":[{"type":"text","text":"key sk-data-5f3a9c1e7d2b"}]}`)
	r = Result{}
	r.Parse(js)
	if d = r.Data(red); bytes.Contains(d, []byte("sk-data")) || !bytes.Contains(d, []byte(redact.Mask)) {
		t.Errorf("a masked text's data: %s", d)
	}
	if !bytes.Contains(js, []byte("sk-data-5f3a9c1e7d2b")) {
		t.Errorf("the mask was written into the result's bytes: %s", js)
	}
	// Printable, but not as encoding/json writes it (its < escaped), and
	// a text that holds JSON: the data is TextData's.
	for _, c := range []string{`"a<b"`, `"[1,2]"`, `" {} "`} {
		js = []byte(`{"content":[{"type":"text","text":` + c + `}]}`)
		r = Result{}
		r.Parse(js)
		var text string
		if err := json.Unmarshal([]byte(c), &text); err != nil {
			t.Fatal(err)
		}
		if d := r.Data(nil); !bytes.Equal(d, TextData(text)) {
			t.Errorf("the data of %s = %s, want %s", c, d, TextData(text))
		}
	}
}
