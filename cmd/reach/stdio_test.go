package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioSession runs `reach stdio` on pipes; send writes a line, answer
// reads the next line it writes.
type stdioSession struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	errc chan error
}

func startStdio(t *testing.T) *stdioSession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	root := newRoot(outW, io.Discard)
	root.SetIn(inR)
	root.SetArgs([]string{"stdio"})
	s := &stdioSession{t: t, in: inW, out: bufio.NewScanner(outR), errc: make(chan error, 1)}
	s.out.Buffer(nil, 1<<20)
	go func() { s.errc <- root.ExecuteContext(ctx); outW.Close() }()
	return s
}

func (s *stdioSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("writing %.80q: %v (reach stdio ended?)", line, err)
	}
}

type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (s *stdioSession) answer() (rpcAnswer, string) {
	s.t.Helper()
	done := make(chan bool, 1)
	go func() { done <- s.out.Scan() }()
	select {
	case ok := <-done:
		if !ok {
			s.t.Fatalf("reach stdio wrote nothing more: %v", s.out.Err())
		}
	case <-time.After(10 * time.Second):
		s.t.Fatal("no answer within 10s")
	}
	var a rpcAnswer
	json.Unmarshal(s.out.Bytes(), &a)
	return a, s.out.Text()
}

// TestStdioSurvivesMalformedLines: a line that is not JSON, not a
// JSON-RPC message, too deep, or a batch where the protocol has none is
// answered with a JSON-RPC error (-32700 or -32600, with the request's id
// when it can be read) and the session goes on: a call after them works.
func TestStdioSurvivesMalformedLines(t *testing.T) {
	s := startStdio(t)
	expectError := func(line string, code int64, id string) {
		t.Helper()
		s.send(line)
		a, raw := s.answer()
		if a.Error == nil || a.Error.Code != code || string(a.ID) != id || a.Error.Message == "" {
			t.Errorf("after %.60q: %s, want error %d with id %s", line, raw, code, id)
		}
	}
	expectError(`{not json`, -32700, "null")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if a, raw := s.answer(); string(a.ID) != "1" || a.Result == nil {
		t.Fatalf("initialize: %s", raw)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	expectError(`{}`, -32600, "null")
	expectError(`{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, "5")
	expectError(`{"jsonrpc":"2.0","id":{"six":6},"method":"ping"}`, -32600, "null")
	expectError(`{"jsonrpc":"2.0","id":"six","method":7}`, -32600, `"six"`)
	expectError(`42`, -32600, "null")
	expectError(`{"jsonrpc":"2.0","id":7,"method":"ping"} {"jsonrpc":"2.0","id":8,"method":"ping"}`, -32700, "null")
	expectError(`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, -32600, "null")
	// The versions with batches, as a reader reads them (it printed a Go
	// list: "part of MCP [2024-11-05 2025-03-26] only").
	s.send(`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`)
	if a, raw := s.answer(); a.Error == nil || !strings.Contains(a.Error.Message, "batches are part of MCP 2024-11-05 and 2025-03-26 only") {
		t.Errorf("a batch on 2025-06-18: %s, want it to name the versions with batches", raw)
	}
	// A number id the SDK would answer under another (1.5 as 1,
	// 1234567890123456789 as 1234567890123456768): refused under it, the
	// call not run.
	expectError(`{"jsonrpc":"2.0","id":1234567890123456789,"method":"tools/call","params":{"name":"get_order","arguments":{"order_id":"1002"}}}`, -32600, "1234567890123456789")
	expectError(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "1.5")
	// A request whose id is null (MCP: an id MUST NOT be null) was run as
	// a notification and never answered: the client waited for ever.
	expectError(`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"get_order","arguments":{"order_id":"1002"}}}`, -32600, "null")
	expectError(strings.Repeat("[", 100000)+strings.Repeat("]", 100000), -32700, "null")
	s.send(`   `)
	s.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"get_order","arguments":{"order_id":"1002"}}}`)
	if a, raw := s.answer(); string(a.ID) != "10" || !strings.Contains(string(a.Result), "Grace") {
		t.Errorf("a call after the malformed lines: %s", raw)
	}
	s.in.Close()
	select {
	case err := <-s.errc:
		if err != nil {
			t.Errorf("reach stdio returned %v when stdin closed", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("reach stdio did not return when stdin closed")
	}
}

// TestStdioBatchesOnOldProtocols: a client of a protocol with batches
// (2025-03-26) gets its batch answered as a batch; a batch the SDK could
// not take (an id twice) is refused and the session goes on.
func TestStdioBatchesOnOldProtocols(t *testing.T) {
	s := startStdio(t)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if a, raw := s.answer(); string(a.ID) != "1" || !strings.Contains(string(a.Result), "2025-03-26") {
		t.Fatalf("initialize: %s", raw)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	if a, raw := s.answer(); a.Error == nil || a.Error.Code != -32600 {
		t.Errorf("a batch with an id twice: %s, want -32600", raw)
	}
	s.send(`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]`)
	var batch []rpcAnswer
	if _, raw := s.answer(); json.Unmarshal([]byte(raw), &batch) != nil || len(batch) != 2 {
		t.Errorf("a batch of two pings: %s, want two answers in an array", raw)
	}
	s.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	if a, raw := s.answer(); string(a.ID) != "5" || a.Error != nil {
		t.Errorf("a ping after the batches: %s", raw)
	}
	s.in.Close()
	<-s.errc
}

// FuzzStdioLines: whatever a client writes, what stdioLines passes on
// never stops the SDK's reader (it reads messages until the input ends),
// and every line it writes itself is a JSON-RPC error.
func FuzzStdioLines(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{not json`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]` + "\n" + `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}` + "\n[]\n[1]",
		"{}\n42\n\"s\"\nnull\n" + `{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"} x`,
		"\xff\xfe\n" + `{"jsonrpc":"2.0","id":"\xff","method":"ping"}`,
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		var out strings.Builder
		in, w := stdioPipes(strings.NewReader(input), &out, slog.New(slog.DiscardHandler))
		conn, err := (&mcp.IOTransport{Reader: in, Writer: w, MaxLineLength: -1}).Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for {
			_, err := conn.Read(t.Context())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("the SDK's reader stopped on %q: %v", input, err)
			}
		}
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			var a rpcAnswer
			if line != "" && (json.Unmarshal([]byte(line), &a) != nil || a.Error == nil) {
				t.Fatalf("stdioLines wrote %q, not a JSON-RPC error", line)
			}
		}
	})
}

// TestStdioAnswersBeforeEnd: a client that writes its requests and closes
// stdin gets an answer to each, as from the reference servers; the SDK
// ended the session at the end of stdin, and reach stdio exited without
// writing the answers not yet written (here all but a parse error's).
func TestStdioAnswersBeforeEnd(t *testing.T) {
	input := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_order","arguments":{"order_id":"1001"}}}
{"jsonrpc":"2.0","id":"three","method":"tools/list"}
`
	var out lockedBuffer
	root := newRoot(&out, io.Discard)
	root.SetIn(strings.NewReader(input))
	root.SetArgs([]string{"stdio"})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	for line := range strings.Lines(out.String()) {
		var a rpcAnswer
		if json.Unmarshal([]byte(line), &a) != nil || a.Error != nil || a.Result == nil {
			t.Errorf("not an answer: %.200s", line)
			continue
		}
		answered[string(a.ID)] = true
	}
	for _, id := range []string{`1`, `2`, `"three"`} {
		if !answered[id] {
			t.Errorf("request %s was not answered; the output:\n%s", id, out.String())
		}
	}
}

// TestStdioSignalAnswersHeldCall: `reach stdio` that gets a signal (its
// command's context ends, as on SIGTERM) while a call is held for a
// human's decision (approvals wait) answers that call as pending, as the
// HTTP lanes do, and the approval stays pending in the store for a later
// session. Before, the SDK's session closed its transport at once and the
// client got no answer at all.
func TestStdioSignalAnswersHeldCall(t *testing.T) {
	data := t.TempDir()
	cfg := writeConfig(t, "examples: true\ndata: '"+data+"'\napprovals: {ttl: 5m, wait: 1m}\ntools: {refund_order: {access: high_risk}}\n")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, signal := context.WithCancel(context.Background())
	defer signal()
	root := newRoot(outW, io.Discard)
	root.SetIn(inR)
	root.SetArgs([]string{"stdio", "--config", cfg})
	errc := make(chan error, 1)
	go func() { errc <- root.ExecuteContext(ctx); outW.Close() }()
	s := &stdioSession{t: t, in: inW, out: bufio.NewScanner(outR), errc: errc}
	s.out.Buffer(nil, 1<<20)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if a, line := s.answer(); a.Result == nil {
		t.Fatalf("initialize: %s", line)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`{"jsonrpc":"2.0","id":"held","method":"tools/call","params":{"name":"refund_order","arguments":{"order_id":"1001","amount":5,"reason":"damaged"}}}`)

	// Held: the approval is filed (and stored) before the signal.
	held := false
	for deadline := time.Now().Add(10 * time.Second); !held && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		held = pendingApprovals(t, data) > 0
	}
	if !held {
		t.Fatal("no pending approval appeared for the held call")
	}
	signal()
	// What it wrote before it returned (stdout is closed as it returns:
	// the process would have exited).
	var rest []string
	read := make(chan bool)
	go func() {
		for s.out.Scan() {
			rest = append(rest, s.out.Text())
		}
		close(read)
	}()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("reach stdio returned %v after a signal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reach stdio did not end after the signal")
	}
	<-read
	if len(rest) != 1 {
		t.Fatalf("reach stdio wrote %d lines after the signal, want the held call's answer: %q", len(rest), rest)
	}
	var a rpcAnswer
	json.Unmarshal([]byte(rest[0]), &a)
	if string(a.ID) != `"held"` || a.Result == nil {
		t.Fatalf("the held call was answered %s, want a result", rest[0])
	}
	var res struct {
		IsError bool `json:"isError"`
		Meta    struct {
			Error struct {
				Code string `json:"code"`
			} `json:"reach/error"`
		} `json:"_meta"`
	}
	json.Unmarshal(a.Result, &res)
	if !res.IsError || res.Meta.Error.Code != "approval_pending" {
		t.Errorf("the held call was answered %s, want an isError result, approval_pending", rest[0])
	}
	if n := pendingApprovals(t, data); n != 1 {
		t.Errorf("%d approvals pending after the session ended, want the held call's kept", n)
	}
}

// pendingApprovals counts the approvals pending in the store of the data
// folder data.
func pendingApprovals(t *testing.T, data string) int {
	t.Helper()
	db, err := sqlite.OpenFile(filepath.Join(data, sqlite.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM approvals WHERE status = 'pending'`).Scan(&n); err != nil {
		t.Logf("reading approvals: %v", err)
		return 0
	}
	return n
}
