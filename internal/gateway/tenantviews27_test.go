package gateway

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// toolsPageCalls reads the calls column of tool's row on the UI's tools
// page as who sees it, -1 for an empty cell.
func toolsPageCalls(t *testing.T, srvURL, key, tool string) (calls int, page string) {
	t.Helper()
	status, page := rawAs(t, key, "GET", srvURL+"/ui/tools", "")
	if status != 200 {
		t.Fatalf("GET /ui/tools = %d %.300s", status, page)
	}
	m := regexp.MustCompile(`<b>` + regexp.QuoteMeta(tool) + `</b>.*?<td class="breaker">.*?</td><td>(\d*)</td>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the tools page has no row of %s: %.2000s", tool, page)
	}
	if m[1] == "" {
		return -1, page
	}
	n, _ := strconv.Atoi(m[1])
	return n, page
}

// statsCalls reads tool's calls in GET /v1/stats as who sees it.
func statsCalls(t *testing.T, srvURL, key, tool string) (int, map[string]any) {
	t.Helper()
	status, out := do(t, "GET", srvURL+"/v1/stats", "", map[string]string{"Authorization": "Bearer " + key})
	if status != 200 {
		t.Fatalf("GET /v1/stats = %d %v", status, out)
	}
	for _, s := range out["tools"].([]any) {
		if path(s, "tool") == tool {
			return int(path(s, "calls").(float64)), out
		}
	}
	return 0, out
}

// TestTenantOperatorToolsFigures: the UI's tools page and GET /v1/stats
// of an operator of tenant acme count the calls of acme's requests only;
// an operator of no tenant counts every tenant's; a principal who is no
// operator sees the tools without figures (they count other principals'
// calls). Before, the tools page showed every tenant's calls to anyone
// signed in, and GET /v1/stats answered acme's operator 403.
func TestTenantOperatorToolsFigures(t *testing.T) {
	_, srvURL, keys := tenantOpsGateway(t)
	// Each trip reserved once; globex reserves five more times.
	for i := range 5 {
		body := fmt.Sprintf(`{"request_id":"globex-more","tool_calls":[{"call_id":"m%d","tool":"reserve","arguments":{"seat":"%dB"}}]}`, i, i)
		if status, out := do(t, "POST", srvURL+"/v1/calls", body, map[string]string{"Authorization": "Bearer " + keys["alice@globex"]}); status != 200 {
			t.Fatalf("globex's call = %d %v", status, out)
		}
	}
	if n, out := statsCalls(t, srvURL, keys["root"], "reserve"); n != 7 {
		t.Fatalf("root's GET /v1/stats counts %d calls of reserve, want 7: %v", n, out)
	}
	if n, _ := toolsPageCalls(t, srvURL, keys["root"], "reserve"); n != 7 {
		t.Errorf("root's tools page counts %d calls of reserve, want every tenant's 7", n)
	}
	n, page := toolsPageCalls(t, srvURL, keys["ops@acme"], "reserve")
	if n != 1 {
		t.Errorf("ops@acme's tools page counts %d calls of reserve, want acme's 1", n)
	}
	if !strings.Contains(page, "tenant acme") {
		t.Errorf("ops@acme's tools page does not say whose calls it counts: %.2000s", page)
	}
	if n, out := statsCalls(t, srvURL, keys["ops@acme"], "reserve"); n != 1 || out["tenant"] != "acme" {
		t.Errorf("ops@acme's GET /v1/stats counts %d calls of reserve (%v), want acme's 1", n, out)
	}
	if n, page := toolsPageCalls(t, srvURL, keys["alice@acme"], "reserve"); n != -1 || !strings.Contains(page, "for operators") {
		t.Errorf("alice@acme's tools page counts %d calls of reserve, want no figures and why", n)
	}
	if status, body := rawAs(t, keys["alice@acme"], "GET", srvURL+"/v1/stats", ""); status != http.StatusForbidden {
		t.Errorf("alice@acme GET /v1/stats = %d %.200s, want 403", status, body)
	}
}
