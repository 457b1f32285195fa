package ui

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// TestBrowserStaleFormAfterRestart: a page of the UI loaded before the
// gateway restarted (a new form token) sends its form after it: the
// browser shows a page of the UI saying that nothing was done and why,
// with a link to load the page again, from which the form then goes
// through. Before, the browser showed the JSON error bad_form_token. A
// request the gateway does not have is a page of the UI too, saying so,
// with its navigation (before, the text alone). (The
// page gets no live updates here: one after the restart brings its forms
// the new token, when its stream reconnects before the form is sent.)
func TestBrowserStaleFormAfterRestart(t *testing.T) {
	chromium, node, pw := browserDeps(t)
	ap := &fakeApprovals{items: []Approval{{ID: "ap1", Tool: "refund_order", Args: `{"order":7}`, Status: "pending", Request: "r1", AskedBy: "alice", Needs: "a reviewer"}}}
	rt := reach.New(nil)
	var current atomic.Pointer[UI]
	current.Store(New(Options{Runtime: rt, Approvals: ap}))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		current.Store(New(Options{Runtime: rt, Approvals: ap})) // a new process: a new form token
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { current.Load().ServeHTTP(w, r) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	script, _ := filepath.Abs("testdata/stale.js")
	run := exec.CommandContext(t.Context(), node, script)
	run.Env = append(os.Environ(), "BASE="+srv.URL, "RESTART="+srv.URL+"/restart", "CHROMIUM="+chromium, "PW="+pw)
	run.Stderr = os.Stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("browser script: %v\n%s", err, out)
	}
	var saw struct {
		Error, Type, Text, Back, Flash, MissText string
		Status, Nav, MissStatus, MissNav         int
	}
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("browser script's output: %v\n%s", err, out)
	}
	if saw.Error != "" {
		t.Fatalf("in the browser: %s", saw.Error)
	}
	if saw.Status != 403 || !strings.HasPrefix(saw.Type, "text/html") || saw.Nav == 0 || !strings.Contains(saw.Text, "nothing was done") || strings.Contains(saw.Text, "{") {
		t.Errorf("the stale form's answer: %d %s, %d links of navigation, %q; want 403, a page of the UI saying nothing was done", saw.Status, saw.Type, saw.Nav, saw.Text)
	}
	if saw.MissStatus != 404 || saw.MissNav == 0 || !strings.Contains(saw.MissText, `no request "no-such-request" of yours`) {
		t.Errorf("a request the gateway does not have: %d, %d links of navigation, %q; want 404, a page of the UI saying so", saw.MissStatus, saw.MissNav, saw.MissText)
	}
	if saw.Back != "/ui/approvals" || !strings.Contains(saw.Flash, "approval of ap1 is recorded") || ap.items[0].Status != "approved" {
		t.Errorf("from the link, back on %s and sent again: flash %q, the approval %s", saw.Back, saw.Flash, ap.items[0].Status)
	}
}
