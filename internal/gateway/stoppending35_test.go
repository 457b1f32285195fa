package gateway

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/pgtest"
)

// TestStoppedWhilePending35: a call waits for approval and its request is
// stopped. The call's frame (the API's view, the UI's timeline) says the
// request was stopped, by whom and why, and what to do (report, start
// nothing new), as every call a stop ends does. Before, it read "expired:
// nobody decided, or the approved call was not repeated, in time" and "If
// the call is still needed, make it again", which the stopped request
// refuses.
func TestStoppedWhilePending35(t *testing.T) {
	stoppedWhilePending(t, "", false)
}

// TestInstancesStoppedWhilePending35 is TestStoppedWhilePending35 on a
// PostgreSQL store, the stop sent through a second instance.
func TestInstancesStoppedWhilePending35(t *testing.T) {
	stoppedWhilePending(t, "store: "+pgtest.Database(t)+"\n", true)
}

func stoppedWhilePending(t *testing.T, store string, second bool) {
	dir := t.TempDir()
	ks, err := auth.OpenKeys(auth.KeysPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	alice, _, err := ks.Create(auth.KeySpec{Principal: "alice", Roles: []string{"operator"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(store+"instance: a\nexamples: true\ndata: "+dir+"\nauth: {keys: true}\n"), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGateway(t, cfg)
	srv := serveTest(t, g)
	url := srv.URL
	stopURL := url
	if second {
		cfg2, err := config.Parse([]byte(store+"instance: b\nexamples: true\ndata: "+dir+"\nauth: {keys: true}\n"), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		stopURL = serveTest(t, newTestGateway(t, cfg2)).URL
	}
	as := map[string]string{"Authorization": "Bearer " + alice}
	_, out := do(t, "POST", url+"/v1/calls", `{"request_id":"p35","tool_calls":[{"call_id":"c","tool":"refund_order","arguments":{"order_id":"1001","amount":10,"reason":"broken"}}]}`, as)
	if s := path(out, "results", 0, "status"); s != "pending" {
		t.Fatalf("the refund is %v, want pending: %v", s, out)
	}
	if st, o := do(t, "POST", stopURL+"/v1/requests/p35/cancel", `{"mode":"cancel","reason":"wrong customer"}`, as); st != 200 {
		t.Fatalf("cancel: %d %v", st, o)
	}
	var msg, sugg string
	for range 200 {
		_, req := do(t, "GET", url+"/v1/requests/p35", "", as)
		msg, _ = path(req, "frames", 0, "error", "message").(string)
		sugg, _ = path(req, "frames", 0, "error", "suggestion").(string)
		if path(req, "frames", 0, "status") != "awaiting_approval" && msg != "" && !strings.Contains(msg, "needs approval") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the call reads: %s / %s", msg, sugg)
	if !strings.Contains(msg, "stopped (cancel) by alice: wrong customer") || strings.Contains(msg, "nobody decided") ||
		strings.Contains(sugg, "make it again") {
		t.Errorf("the call pending when its request was stopped reads %q / %q; want the stop, who and why, and to start nothing new", msg, sugg)
	}
	// After a restart, read back from the store, it reads the same.
	srv.Close()
	g.Close()
	g = newTestGateway(t, cfg)
	url = serveTest(t, g).URL
	_, req := do(t, "GET", url+"/v1/requests/p35", "", as)
	msg2, _ := path(req, "frames", 0, "error", "message").(string)
	sugg2, _ := path(req, "frames", 0, "error", "suggestion").(string)
	if msg2 != msg || sugg2 != sugg {
		t.Errorf("after a restart the call reads %q / %q; want %q / %q as before", msg2, sugg2, msg, sugg)
	}
}
