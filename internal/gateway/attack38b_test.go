package gateway

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/policy"
)

// TestAttack38bTenantOncallGetsNoOthersReserve: rate_limit.priorities
// matched a principal's bare name in any tenant, so the "oncall" of a
// tenant that is not the one named took the capacity reserved for the
// named one's priority requests. Now acme's oncall, named as a budget's
// principal of a tenant is, takes the reserve; globex's oncall, and the
// oncall of no tenant, are refused once only the reserve is left.
func TestAttack38bTenantOncallGetsNoOthersReserve(t *testing.T) {
	dir := t.TempDir()
	polFile := filepath.Join(dir, "policy.cedar")
	if err := os.WriteFile(polFile, policy.DefaultSource(), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, tenant := range []string{"acme", "globex", ""} {
		secret, _, err := ks.Create(auth.KeySpec{Principal: "oncall", Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		keys[tenant] = secret
	}
	cfg, err := config.Parse([]byte("examples: true\ndata: "+dir+"\nauth: {keys: true}\npolicy: {path: "+polFile+"}\n"+
		"rate_limit:\n  per_second: 0.001\n  burst: 4\n  reserved: 0.5\n  priorities: [{principal: oncall, tenant: acme, priority: 1}]\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	call := func(tenant string) (string, string) {
		t.Helper()
		status, out := do(t, "POST", url+"/v1/calls", `{"tool_calls":[{"call_id":"c1","tool":"search_kb","arguments":{"query":"refund"}}]}`,
			map[string]string{"Authorization": "Bearer " + keys[tenant]})
		if status != http.StatusOK {
			t.Fatalf("oncall of tenant %q: %d %v", tenant, status, out)
		}
		return fmt.Sprint(path(out, "results", 0, "error", "code")), fmt.Sprint(path(out, "results", 0, "error", "message"))
	}
	const reserved = "capacity reserved for priority requests"
	for i, c := range []struct {
		tenant, code, says string
	}{
		{"globex", "<nil>", ""},
		{"", "<nil>", ""},
		{"globex", "rate_limited", reserved}, // another tenant's oncall: no priority
		{"", "rate_limited", reserved},       // the oncall of no tenant: none either
		{"acme", "<nil>", ""},                // acme's takes the reserve
		{"acme", "<nil>", ""},
	} {
		code, msg := call(c.tenant)
		if code != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("call %d, oncall of tenant %q: %s %q, want %s saying %q", i+1, c.tenant, code, msg, c.code, c.says)
		}
	}
}
