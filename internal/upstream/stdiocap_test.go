//go:build unix

package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/retry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addBigTools adds to s the tools of the stdio upstream that answers
// large: big (an answer of as many bytes as asked), pid (its process's id)
// and hold (which answers once the file it names exists).
func addBigTools(s *mcp.Server) {
	type bigIn struct {
		Bytes int `json:"bytes"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", in.Bytes)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "pid"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(os.Getpid())}}}, nil, nil
	})
	type holdIn struct {
		File string `json:"file"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "hold"}, func(ctx context.Context, _ *mcp.CallToolRequest, in holdIn) (*mcp.CallToolResult, any, error) {
		for {
			if _, err := os.Stat(in.File); err == nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil, nil
			}
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
}

// A stdio upstream's answer past mcpwire.MaxAnswer fails as too_large, a
// permanent failure whose text says what to do, as an HTTP upstream's does:
// the SDK read a stdio answer to 16 MiB (past the HTTP bound's answers
// within it passed) and past it ended the connection, every call on it
// failing as "unavailable" (retried, the answer written again as large,
// and counted against the upstream's breaker) and the process restarted.
// The process's call open meanwhile is answered, and the process serves on.
func TestStdioUpstreamAnswerTooLarge(t *testing.T) {
	defer func(n int64) { mcpwire.MaxAnswer = n }(mcpwire.MaxAnswer)
	mcpwire.MaxAnswer = 1 << 20
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(t, &config.Config{Upstreams: []config.Upstream{{Name: "io", Command: []string{exe},
		Env: map[string]config.Secret{"REACH_TEST_STDIO_UPSTREAM": "big"}}}})
	call := func(tool, args string) (string, error) {
		for _, rt := range p.Tools() {
			if rt.Name == tool {
				data, err := rt.Func(t.Context(), json.RawMessage(args))
				var s string
				json.Unmarshal(data, &s)
				return s, err
			}
		}
		t.Fatalf("no tool %s", tool)
		return "", nil
	}
	pid, err := call("io__pid", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call("io__big", `{"bytes":524288}`); err != nil {
		t.Fatalf("an answer of half the bound: %v", err)
	}
	release := filepath.Join(t.TempDir(), "release")
	held := make(chan error, 1)
	go func() {
		args, _ := json.Marshal(map[string]string{"file": release})
		_, err := call("io__hold", string(args))
		held <- err
	}()
	_, err = call("io__big", `{"bytes":2097152}`)
	te, transient := retry.Transient(err, false, true)
	if te == nil || transient || te.Type != "too_large" || !strings.Contains(te.Message, "ask the tool for less") {
		t.Fatalf("an answer of twice the bound: %v (transient %v); want a permanent too_large saying to ask for less", err, transient)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil {
		t.Fatalf("the call open while the answer too large was read: %v", err)
	}
	if got := echo(t, p, "io__echo", "hi"); got != "echo: hi" {
		t.Fatalf("after an answer past the bound, echo: %q", got)
	}
	if again, err := call("io__pid", `{}`); err != nil || again != pid {
		t.Fatalf("the process after an answer past the bound: %s (%v); want the same, %s", again, err, pid)
	}
}

// hugeLine is a reader of a JSON-RPC response of size bytes whose id comes
// after its result (as the TypeScript SDK writes them), then a ping: it
// is made as it is read, never held.
type hugeLine struct {
	head, tail []byte
	fill       int
}

func newHugeLine(size int) *hugeLine {
	head := `{"result":{"content":[{"type":"text","text":"`
	tail := `"}]},"jsonrpc":"2.0","id":7}` + "\n" + `{"jsonrpc":"2.0","id":8,"method":"ping"}` + "\n"
	return &hugeLine{head: []byte(head), tail: []byte(tail), fill: size - len(head) - len(tail)}
}

func (h *hugeLine) Read(p []byte) (int, error) {
	switch {
	case len(h.head) > 0:
		n := copy(p, h.head)
		h.head = h.head[n:]
		return n, nil
	case h.fill > 0:
		n := min(len(p), h.fill)
		for i := range n {
			p[i] = 'x'
		}
		h.fill -= n
		return n, nil
	case len(h.tail) > 0:
		n := copy(p, h.tail)
		h.tail = h.tail[n:]
		return n, nil
	}
	return 0, io.EOF
}

// A line of 256 MiB, the bound 1 MiB: jsonLines passes on in its place the
// error response to its call (found by its id, written after the result),
// then the next message, and holds no more than about the bound meanwhile.
// It passed the line on whole, and the SDK held it to 16 MiB.
func TestJSONLinesTooLong(t *testing.T) {
	const size = 256 << 20
	j := &jsonLines{r: bufio.NewReaderSize(newHugeLine(size), 64<<10), log: slog.New(slog.DiscardHandler), max: 1 << 20}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := io.ReadAll(io.LimitReader(j, 64<<20))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	want := string(tooLargeAnswer([]byte("7"), 1<<20)) + `{"jsonrpc":"2.0","id":8,"method":"ping"}` + "\n"
	if string(out) != want {
		t.Fatalf("passed on %d bytes, starting %.200q; want %q", len(out), out, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("reading a line of %d bytes, the bound 1 MiB, allocated %d bytes", size, alloc)
	}
}

// idScan finds a response's id wherever it is among the top-level members
// and only there, as encoding/json would read it, and tells a response
// from a request, a notification or what is not an object.
func TestIDScan(t *testing.T) {
	for _, c := range []struct{ in, id string }{
		{`{"jsonrpc":"2.0","id":12,"result":{}}`, "12"},
		{`{"result":{"id":1,"x":[{"id":2}]},"jsonrpc":"2.0","id":"a\"b"}`, `"a\"b"`},
		{` { "ID" : -3 , "error":{"code":1,"message":"id"}} `, "-3"},
		{`{"i\u0064":4,"result":"\"id\":5"}`, "4"},
		{`{"id":1,"id":2,"result":{}}`, "2"},
		{`{"id":1,"method":"ping"}`, ""},
		{`{"method":"notifications/progress","params":{"id":1}}`, ""},
		{`{"result":{"id":1}}`, ""},
		{`{"id":null,"error":{}}`, ""},
		{`{"id":{"a":1},"result":{}}`, ""},
		{`{"id":1,"result":{}`, ""},
		{`{"id":1,"result":{}} x`, ""},
		{`[{"id":1,"result":{}}]`, ""},
		{`{"id":"` + strings.Repeat("y", 200) + `","result":{}}`, ""},
	} {
		var s idScan
		for i := range len(c.in) { // a byte at a time: pieces may end anywhere
			s.feed([]byte{c.in[i]})
		}
		if got := string(s.responseID()); got != c.id {
			t.Errorf("%s: id %q, want %q", c.in, got, c.id)
		}
	}
}

// FuzzIDScan: an id idScan finds in JSON is the id encoding/json reads of
// the object, which has no method. (idScan checks no more of the JSON than
// it needs: what is not JSON gets no answer from the SDK either, and an id
// found in it only makes that call fail as too_large.)
func FuzzIDScan(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":12,"result":{}}`)
	f.Add(`{"result":{"id":1},"Id":"x\"y","id":3}`)
	f.Add(`{"i\u0064":4,"method":"m"}`)
	f.Fuzz(func(t *testing.T, in string) {
		var s idScan
		s.feed([]byte(in))
		id := s.responseID()
		if id == nil || !json.Valid([]byte(in)) {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if err := json.Unmarshal([]byte(in), &m); err != nil {
			t.Fatalf("%q: id %s found in what encoding/json does not read: %v", in, id, err)
		}
		if m.Method != nil || string(m.ID) != string(id) {
			t.Fatalf("%q: id %s, encoding/json reads id %s, method %v", in, id, m.ID, m.Method)
		}
	})
}
