package gateway

import (
	"os"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
)

// TestManyPendingFramesSettled: an approval waited for by more frames
// than it once kept (16: the call asked again, by its idempotency key, in
// 20 requests) ends every one of them once denied, in the running gateway
// and after a restart. Before, the frames past the 16th stayed
// awaiting_approval for ever.
func TestManyPendingFramesSettled(t *testing.T) {
	manyPendingFramesSettled(t, func(*testing.T) string { return "" })
}

// TestInstancesManyPendingFramesSettled is TestManyPendingFramesSettled on
// a PostgreSQL store.
func TestInstancesManyPendingFramesSettled(t *testing.T) {
	manyPendingFramesSettled(t, func(t *testing.T) string { return "store: " + pgtest.Database(t) + "\ninstance: a\n" })
}

func manyPendingFramesSettled(t *testing.T, store func(*testing.T) string) {
	const n = 20
	yaml := store(t) + "examples: true\ndata: " + t.TempDir() + "\ntools:\n  refund_order: {access: high_risk}\n"
	cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	url := srv.URL
	frames := refundWaitingIn(t, url, "rm34", "k34", n)
	denyTheApproval(t, url)
	check := func(when string) {
		t.Helper()
		if left := framesNotDenied(t, url, frames, when); left > 0 {
			t.Errorf("%s: %d of the %d frames that waited for the denied approval are not refused approval_denied", when, left, n)
		}
	}
	check("running")
	srv.Close()
	g.Close()
	g = newTestGateway(t, cfg)
	srv = serveTest(t, g)
	url = srv.URL
	check("after a restart")
}
