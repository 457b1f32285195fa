package gateway

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFrameworksHostedMCPRefused: OpenAI Agents on its defaults, with
// reach's MCP tools and a hosted MCP tool (hostedMcpTool, which asks the
// model's endpoint to call the server itself, with no approval) and its
// model through reach's model proxy. The turn went to the model, and
// every call the endpoint made of that server passed none of reach's
// guards and was in no graph. Now the run ends at its first turn with
// reach's 400 hosted_mcp_unsupported, which names the server and says to
// make it an upstream of reach; the SDK does not retry it and the model is
// never asked.
func TestFrameworksHostedMCPRefused(t *testing.T) {
	dir, node := frameworksCacheOf(t, "@openai/agents", "openai")
	s, m := streamShop(t)
	src, err := os.ReadFile("testdata/frameworks/hosted.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "reach-hosted", src)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "OPENAI_AGENTS_DISABLE_TRACING=1", "MODEL_URL="+s.url+"/v1", "MCP_URL="+s.url+"/mcp", "HOSTED_URL="+s.upURL)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hosted.mjs: %v\n%s", err, b)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var r struct {
		OK     bool   `json:"ok"`
		Error  string `json:"error"`
		Status *int   `json:"status"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("hosted.mjs printed (%v):\n%s", err, clip(string(b), 4000))
	}
	if r.OK || r.Status == nil || *r.Status != 400 || !strings.Contains(r.Error, `hosted MCP tool (server_label "shop")`) ||
		!strings.Contains(r.Error, "Make the server an upstream of reach") {
		t.Errorf("the run: %+v\nwant it ended by a 400 naming the hosted MCP tool and saying what to do", r)
	}
	if n := m.turns.Load(); n != 0 {
		t.Errorf("the model was asked %d times, want none", n)
	}
	if st := s.wire.statuses(); len(st) != 1 || st[0] != 400 {
		t.Errorf("model calls answered %v, want one 400 (not retried)", st)
	}
}
