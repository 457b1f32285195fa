package gateway

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestAttack26AuditMaskedWithSecretsConfiguredLater: a value configured as
// a secret after events that hold it were recorded (a credential an agent
// or an upstream spelled, found and added to the secrets file, the gateway
// started again) is masked where the audit log is shown: GET /v1/audit and
// the UI's audit page. Before, those events showed it as recorded; the log
// itself (and its chain) is left as it is.
func TestAttack26AuditMaskedWithSecretsConfiguredLater(t *testing.T) {
	const leaked = "sk-live-Q7f3Zx9Lm2Pw8Rt4"
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "reach.yaml")
	os.WriteFile(cfgPath, []byte("examples: true\ndata: data\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveTest(t, g)
	if status, out := do(t, "POST", srv.URL+"/v1/calls", `{"request_id":"leak","tool_calls":[{"call_id":"a","tool":"search_kb","arguments":{"query":"why does `+leaked+` fail"}}]}`, nil); status != http.StatusOK {
		t.Fatalf("the call: %d %v", status, out)
	}
	if err := g.audit.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	g.Close()

	// The value is found, configured as a secret, and the gateway started again.
	os.WriteFile(filepath.Join(dir, "secrets.env"), []byte("LEAKED="+leaked+"\n"), 0o600)
	os.WriteFile(cfgPath, []byte("examples: true\ndata: data\nsecrets: {file: secrets.env}\n"), 0o600)
	if cfg, err = config.Load(cfgPath); err != nil {
		t.Fatal(err)
	}
	if g, err = New(context.Background(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	url := serveTest(t, g).URL
	for _, path := range []string{"/v1/audit?request=leak", "/v1/audit", "/v1/audit?request=leak&tree=1"} {
		status, body := get(t, url+path)
		if status != http.StatusOK || !strings.Contains(body, `"search_kb"`) {
			t.Fatalf("GET %s: %d %s, want the call's event", path, status, body)
		}
		if strings.Contains(body, leaked) || strings.Contains(body, "Q7f3Zx9Lm2Pw8Rt4") {
			t.Errorf("GET %s shows the secret: %s", path, body)
		}
		if !strings.Contains(body, "why does") {
			t.Errorf("GET %s: the rest of the arguments is gone: %s", path, body)
		}
	}
}
