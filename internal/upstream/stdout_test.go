package upstream

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func readJSONLines(t testing.TB, in string) string {
	t.Helper()
	j := &jsonLines{r: bufio.NewReaderSize(strings.NewReader(in), 16), log: slog.New(slog.DiscardHandler), max: mcpwire.MaxAnswer}
	out, err := io.ReadAll(j)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// jsonLines passes on the lines that are messages, each with its newline,
// and drops the others (a banner, a log line, a blank line, JSON that is no
// JSON-RPC message, a batch: the protocol reach speaks to upstreams has
// none, and the SDK closed the connection on one).
func TestJSONLinesKeepsMessagesOnly(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	res := `{"jsonrpc":"2.0","id":1,"result":{"text":"a long enough result to cross the buffer"}}`
	in := "Server v1 starting\n\n" + ping + "\r\n  \n{\"not\": \"a message\"}\nDEBUG {\"jsonrpc\"\n" + res + "\n[" + ping + "]\n" + ping
	want := ping + "\r\n" + res + "\n" + ping + "\n"
	if got := readJSONLines(t, in); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// FuzzJSONLines: whatever an upstream writes, what jsonLines passes on is
// lines, each a JSON-RPC message, in the order written.
func FuzzJSONLines(f *testing.F) {
	f.Add("banner\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
	f.Add("[1,2]\n{}\n\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}")
	f.Add("\xff\xfe{\n")
	f.Fuzz(func(t *testing.T, in string) {
		out := readJSONLines(t, in)
		if out != "" && !strings.HasSuffix(out, "\n") {
			t.Fatalf("output %q does not end a line", out)
		}
		rest := in
		for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
			if out == "" {
				break
			}
			trimmed := bytes.TrimSpace([]byte(line))
			if len(trimmed) == 0 {
				t.Fatalf("an empty line passed on: %q", out)
			}
			if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
				t.Fatalf("line %q passed on is no message: %v", line, err)
			}
			i := strings.Index(rest, line)
			if i < 0 {
				t.Fatalf("line %q is not in the input after the previous one", line)
			}
			rest = rest[i+len(line):]
		}
	})
}
