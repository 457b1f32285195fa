package gateway

import (
	"os"
	"testing"

	"github.com/agentreach/reach/internal/config"
)

// TestFramesPastMaxRootsSettledRunning: an approval waited for in more
// requests than its stored record lists (256: the call asked again, by
// its idempotency key, in 300 requests) ends the frame of every one of
// them once denied, in the running gateway. Before, the frames of the
// requests past the 256th stayed awaiting_approval until their graphs
// were read back from the store.
func TestFramesPastMaxRootsSettledRunning(t *testing.T) {
	const n = 300
	yaml := "examples: true\ndata: " + t.TempDir() + "\ntools:\n  refund_order: {access: high_risk}\n"
	cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	url := srv.URL
	frames := refundWaitingIn(t, url, "rm35", "k35", n)
	denyTheApproval(t, url)
	if left := framesNotDenied(t, url, frames, "running"); left > 0 {
		t.Errorf("%d of the %d frames that waited for the denied approval are not refused approval_denied", left, n)
	}
}
