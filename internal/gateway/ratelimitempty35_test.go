package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestRateLimited35FirstTurnLeavesItsFrame (R8): a conversation whose
// first model turn is refused by rate_limit.model leaves, in `reach
// requests` (GET /v1/requests), a request that says why: one refusal, no
// turn, and in its graph the refused model frame (rate_limited, what to
// do), not a request with nothing in it. The turn before it, allowed, is
// a request of its own with its answered frame.
func TestRateLimited35FirstTurnLeavesItsFrame(t *testing.T) {
	ms := httptest.NewServer(twiceModel{})
	t.Cleanup(ms.Close)
	cfg, err := config.Parse([]byte(fmt.Sprintf("model: {base_url: '%s/v1', name: scripted}\nrate_limit: {model: {per_principal: 0.001, per_principal_burst: 1}}\n", ms.URL)), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	url := serveTest(t, newTestGateway(t, cfg)).URL
	for i, want := range []int{http.StatusOK, http.StatusForbidden} {
		if st, out := do(t, "POST", url+"/v1/chat/completions", `{"model":"scripted","messages":[{"role":"user","content":"hi"}]}`, nil); st != want {
			t.Fatalf("turn %d: %d %v, want %d", i+1, st, out, want)
		}
	}
	_, out := do(t, "GET", url+"/v1/requests", "", nil)
	rs, _ := out["requests"].([]any)
	if len(rs) != 2 {
		t.Fatalf("GET /v1/requests: %v, want the two conversations' requests", out)
	}
	var refused int
	for _, r := range rs {
		r := r.(map[string]any)
		id := r["id"].(string)
		_, g := do(t, "GET", url+"/v1/requests/"+id+"/graph", "", nil)
		fs, _ := g["frames"].([]any)
		if len(fs) == 0 {
			t.Fatalf("request %s (%v) has no frame in its graph", id, r)
		}
		if r["refusals"] != float64(1) {
			continue
		}
		refused++
		f := fs[0].(map[string]any)
		if r["turns"] != float64(0) || len(fs) != 1 || f["kind"] != "model" || f["status"] != "refused" ||
			path(f, "error", "code") != "rate_limited" || !strings.Contains(fmt.Sprint(path(f, "error", "suggestion")), "Try again in") {
			t.Errorf("the refused conversation's request %v, graph %v: want no turn and its one model frame refused rate_limited, saying when to try again", r, fs)
		}
	}
	if refused != 1 {
		t.Errorf("%d requests with one refusal, want 1: %v", refused, rs)
	}
}
