package httpapi

import (
	"context"
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
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/telemetry"
)

// TestBrowserDeadLetters: the UI has a dead letters page, in its
// navigation, that lists the open dead letters with their arguments
// masked, retries one (the undo runs once) and dismisses another with a
// note, as the API does; a page of another origin that posts a dismissal
// to it is refused. Before, the UI had no such page: a failed
// compensation was seen and settled with the CLI or the API alone.
func TestBrowserDeadLetters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	dir := os.Getenv("REACH_BROWSER_CACHE")
	if dir == "" {
		root, _ := filepath.Abs("../..")
		dir = filepath.Join(root, ".cache", "browser")
	}
	pw := filepath.Join(dir, "node_modules", "playwright-core")
	skip := t.Skip
	if os.Getenv("REACH_CI") != "" {
		skip = t.Fatal
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		skip("chromium not installed (scripts/browser-deps.sh installs it)")
	}
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(pw); err != nil || statErr != nil {
		skip("node or playwright-core missing (scripts/browser-deps.sh installs them)")
	}

	ctx := context.Background()
	q := reach.NewMemoryDeadLetters()
	const secret = "pw-S3cr3tX9"
	retry := &reach.DeadLetter{Request: "trip", Tool: "release", Args: json.RawMessage(`{"order":"o-1","password":"` + secret + `"}`), Key: "undo:trip/a"}
	dismiss := &reach.DeadLetter{Request: "trip", Tool: "release", Args: json.RawMessage(`{"order":"o-2"}`), Key: "undo:trip/b"}
	for _, d := range []*reach.DeadLetter{retry, dismiss} {
		if err := q.Add(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	rt := reach.New(&reach.Options{DeadLetters: q})
	var runs atomic.Int32
	rt.MustRegister(reach.Tool{Name: "release", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`{"released":true}`), nil
	}})
	a := newAPI(&Options{Runtime: rt, Tools: noTools{}, Approvals: approval.New(nil), Stats: telemetry.NewStats(0), MaxBody: 1 << 20, MCP: http.NotFoundHandler(), Model: http.NotFoundHandler(),
		A2A: http.NotFoundHandler(), Metrics: http.NotFoundHandler()})
	srv := httptest.NewServer(a.handler)
	t.Cleanup(srv.Close)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<form id="f" method="post" action="` + srv.URL + `/ui/deadletters/` + dismiss.ID + `/dismiss"><input name="note" value="gone"></form><script>document.getElementById("f").submit()</script>`))
	}))
	t.Cleanup(evil.Close)

	script, _ := filepath.Abs("testdata/deadletters-browser.js")
	run := exec.CommandContext(t.Context(), node, script)
	run.Env = append(os.Environ(), "BASE="+srv.URL, "EVIL="+evil.URL, "CHROMIUM="+chromium, "PW="+pw, "RETRY="+retry.ID, "DISMISS="+dismiss.ID)
	run.Stderr = os.Stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("browser script: %v\n%s", err, out)
	}
	var saw struct {
		Error, Path, Page, CrossStatus string
		Listed                         []string
		RetryFlash, DismissFlash       string
		OpenAfter, Overflow            int
	}
	if err := json.Unmarshal(out, &saw); err != nil {
		t.Fatalf("browser script's output: %v\n%s", err, out)
	}
	if saw.Error != "" {
		t.Fatalf("in the browser: %s", saw.Error)
	}
	if saw.Path != "/ui/deadletters" || len(saw.Listed) != 2 {
		t.Fatalf("the dead letters page from the navigation: %s listing %v, want both", saw.Path, saw.Listed)
	}
	if strings.Contains(saw.Page, secret) || !strings.Contains(saw.Page, "o-1") {
		t.Errorf("the page shows the undo's secret argument, or not its arguments")
	}
	if !strings.Contains(saw.CrossStatus, "cross-origin") && !strings.Contains(strings.ToLower(saw.CrossStatus), "refused") && !strings.Contains(saw.CrossStatus, "origin") {
		t.Errorf("another origin's dismissal was answered %q, want a refusal", saw.CrossStatus)
	}
	if !strings.Contains(saw.RetryFlash, "succeeded") || runs.Load() != 1 {
		t.Errorf("the retry: flash %q, the undo ran %d times; want once", saw.RetryFlash, runs.Load())
	}
	if !strings.Contains(saw.DismissFlash, "is dismissed") {
		t.Errorf("the dismissal's flash %q", saw.DismissFlash)
	}
	if saw.OpenAfter != 0 || saw.Overflow > 0 {
		t.Errorf("open dead letters after both were settled: %d; the page's horizontal overflow %d px", saw.OpenAfter, saw.Overflow)
	}
	ds, err := q.List(ctx, reach.DeadLetterOpen)
	if err != nil || len(ds) != 0 {
		t.Errorf("open dead letters after the UI settled both: %+v, %v", ds, err)
	}
}
