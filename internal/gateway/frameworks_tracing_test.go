package gateway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFrameworksTracingKeyStays: OpenAI Agents, pointed at reach as
// docs/frameworks/openai-agents.md says, exports each run's trace to
// OpenAI's trace ingest endpoint on its defaults, authenticated with
// OPENAI_API_KEY: with auth:, the reach key the page says to give its
// OpenAI client went to OpenAI with the trace (and the run's model inputs
// and tool results with it, past reach). The page now turns that off with
// setTracingDisabled(true): then nothing is sent there, and the run
// through reach is the same.
func TestFrameworksTracingKeyStays(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai")
	src, err := os.ReadFile("testdata/frameworks/tracing.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-tracing", src)
	const key = "rk_tracingtest0123456789"
	for _, tracing := range []string{"default", "off"} {
		t.Run(tracing, func(t *testing.T) {
			s, _ := streamShop(t)
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script)
			env := slices.DeleteFunc(os.Environ(), func(e string) bool {
				return strings.HasPrefix(e, "OPENAI_AGENTS_DISABLE_TRACING=") || strings.HasPrefix(e, "OPENAI_API_KEY=")
			})
			cmd.Env = append(env, "OPENAI_API_KEY="+key, "TRACING="+tracing, "MODEL_URL="+s.url+"/v1", "MCP_URL="+s.url+"/mcp")
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("tracing.mjs: %v\n%s", err, clip(string(b), 4000))
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			var r struct {
				OK     bool     `json:"ok"`
				Error  string   `json:"error"`
				Ingest []string `json:"ingest"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
				t.Fatalf("tracing.mjs printed (%v):\n%s", err, clip(string(b), 4000))
			}
			if !r.OK {
				t.Fatalf("the run through reach failed: %s", r.Error)
			}
			if n := s.up.called("lookup"); n != 1 {
				t.Errorf("the run made %d lookups through reach, want 1", n)
			}
			switch {
			case tracing == "default" && !slices.Contains(r.Ingest, "Bearer "+key):
				t.Errorf("on its defaults the SDK sent the trace ingest %q; want the reach key, which the page warns of", r.Ingest)
			case tracing == "off" && len(r.Ingest) != 0:
				t.Errorf("with setTracingDisabled(true) the SDK sent the trace ingest %d exports (%q); want none", len(r.Ingest), r.Ingest)
			}
		})
	}
}
