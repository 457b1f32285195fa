package gateway

import (
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// With a data folder, the retention sweep runs (the default retention,
// unset in the configuration) and /metrics counts what it removed, by
// kind; a fresh store has nothing to remove.
func TestRetentionMetric(t *testing.T) {
	g := newTestGateway(t, &config.Config{})
	srv := serveTest(t, g)
	_, m := get(t, srv.URL+"/metrics")
	for _, kind := range []string{"requests", "frames", "tasks", "approvals"} {
		if !strings.Contains(m, `reach_store_retained_rows_total{kind="`+kind+`"} 0`) {
			t.Errorf("/metrics lacks reach_store_retained_rows_total{kind=%q} 0:\n%s", kind, m)
		}
	}
}
