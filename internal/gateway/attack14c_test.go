package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestStartErrorMasksURLSecrets: an upstream's URL may carry its key in
// the query (?key=, ?api_key=: ${VAR} is not expanded in a URL), and every
// dial error quotes the URL. The log and the banner mask it; the error New
// returns, which `reach serve` (a required upstream) and `reach validate`
// print, must mask it too, and still say which upstream and line.
func TestStartErrorMasksURLSecrets(t *testing.T) {
	const key, apiKey = "AIzaQueryKey9876", "sk-query-api-key-1234"
	yaml := "upstreams:\n  - name: gone\n    url: http://" + freeAddr(t) + "/mcp?key=" + key + "&api_key=" + apiKey + "\n    timeout: 2s\n    required: true\n"
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), cfg, nil)
	if err == nil {
		g.Close()
		t.Fatal("New succeeded with an unreachable required upstream")
	}
	msg := err.Error()
	for _, s := range []string{key, apiKey} {
		if strings.Contains(msg, s) {
			t.Errorf("error %q quotes the URL's secret %q", msg, s)
		}
	}
	for _, w := range []string{"line 2", "upstream gone"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}
