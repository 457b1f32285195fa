package reach_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentreach/reach"
)

// A request's agent is named as its client says, without the control and
// format characters that make one name look like another (a right-to-left
// override, a zero-width space, a newline) and cut to 128 bytes, two long
// names staying two: a client's name (MCP clientInfo.name) was recorded
// whole in every audit event of its calls, 4 MiB a call within the body's
// bound.
func TestAgentNameCleaned(t *testing.T) {
	rt := reach.New(nil)
	long := strings.Repeat("a", 1<<20)
	for _, c := range []struct{ in, want string }{
		{"", "main"},
		{"claude-code", "claude-code"},
		{"助手 v2", "助手 v2"},
		{"evil\u202egnp.exe", "evilgnp.exe"},
		{"ad\u200bmin\n", "admin"},
		{" \u2066 ", "main"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
	} {
		_, req, err := rt.Begin(context.Background(), &reach.RequestOptions{Agent: c.in})
		if err != nil {
			t.Fatal(err)
		}
		if got := req.Agent(); got != c.want {
			t.Errorf("agent %q: named %q, want %q", c.in, got, c.want)
		}
		req.End()
	}
	names := map[string]bool{}
	for _, in := range []string{long, long + "b", strings.Repeat("é", 1000)} {
		_, req, err := rt.Begin(context.Background(), &reach.RequestOptions{Agent: in})
		if err != nil {
			t.Fatal(err)
		}
		got := req.Agent()
		req.End()
		if len(got) > 128 || !strings.HasPrefix(got, in[:64]) || !strings.Contains(got, "…") {
			t.Errorf("an agent of %d bytes: named %q (%d bytes); want its start, cut to 128 bytes", len(in), got, len(got))
		}
		names[got] = true
	}
	if len(names) != 3 {
		t.Errorf("three long names made %d", len(names))
	}
}
