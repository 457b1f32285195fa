package gateway

import (
	"strings"
	"testing"
)

// TestAuth34InspectorNoKey runs the MCP Inspector's CLI, with no key,
// against a gateway that takes API keys, as a user at a terminal would
// (MCP_AUTO_OPEN_ENABLED stands for the TTY): after reach's 401 it looks
// for OAuth, finds none, and shows reach's own words (send an API key),
// not a login reach does not offer. (Without a TTY the Inspector stops at
// the 401 with its own "Interactive OAuth requires a TTY", before it asks
// reach anything more.)
func TestAuth34InspectorNoKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	cache := npmCache(t)
	node, bin := inspectorCLI(t, cache)
	t.Setenv("MCP_AUTO_OPEN_ENABLED", "true")
	t.Setenv("MCP_INSPECTOR_SECRET_STORE", "memory")
	base := serveNPM(t, "auth: {keys: true}\n")
	r := runInspector(t, node, bin, t.TempDir(), base+"/mcp", "--method", "tools/list")
	if r.Code == 0 {
		t.Fatalf("tools/list without a key succeeded\n%s", r.Out)
	}
	// Before, the discovery paths answered 401 too: the Inspector showed
	// "This endpoint needs credentials" as a registration rejected, status
	// 401, which it takes for a login to retry.
	msg, _ := r.Error["message"].(string)
	if !strings.Contains(msg, "offers no OAuth login. Send an API key (Authorization: Bearer rk_") || r.Error["status"] == float64(401) {
		t.Errorf("the Inspector should show reach's words (no OAuth login, send an API key):\n%s", r.Out)
	}
}
