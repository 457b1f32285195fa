package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, server mode) against the fixture
// server of conformance_server_test.go twice: served directly over
// Streamable HTTP, and behind the gateway (as an upstream with an empty
// prefix, so the suite finds its fixture names). The gateway must pass every
// scenario the direct server passes.
//
// REACH_CONFORMANCE_OUT=dir keeps the suite's results (dir/direct,
// dir/reach) for a look at every check.
//
// The suite and Node 22 come from `make conformance-deps`
// (scripts/conformance-deps.sh) in .cache/conformance (or
// REACH_CONFORMANCE_CACHE, as the script takes it); without them the test
// skips, and fails under REACH_CI (make test).
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("conformance: skipped in -short mode")
	}
	root := os.Getenv("REACH_CONFORMANCE_CACHE")
	if root == "" {
		root = filepath.Join("..", "..", ".cache", "conformance")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(root, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	nodeBin := filepath.Join(root, "node_modules", "node", "bin")
	for _, p := range []string{suite, filepath.Join(nodeBin, "node")} {
		if _, err := os.Stat(p); err != nil {
			msg := fmt.Sprintf("conformance: %s is missing; run `make conformance-deps` (scripts/conformance-deps.sh) to install the MCP conformance suite and Node 22", p)
			if os.Getenv("REACH_CI") != "" {
				// make test installs the suite: a missing one there is a
				// failure, so that CI never passes by skipping.
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}

	// The fixture server, served directly.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fixture := newConformanceServer()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return fixture },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	direct := "http://" + ln.Addr().String() + "/mcp"

	// The same server behind the gateway, its names unprefixed.
	bare := ""
	g := newTestGateway(t, &config.Config{Upstreams: []config.Upstream{{Name: "conformance", URL: direct, Prefix: &bare}}})
	viaReach := serveTest(t, g).URL + "/mcp"

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	type run struct {
		res map[string]conformanceResult
		err error
	}
	runs := map[string]chan run{"direct": make(chan run, 1), "reach": make(chan run, 1)}
	for name, url := range map[string]string{"direct": direct, "reach": viaReach} {
		go func() {
			out := t.TempDir()
			if keep := os.Getenv("REACH_CONFORMANCE_OUT"); keep != "" {
				out = filepath.Join(keep, name) // kept for a look at the suite's full results
			}
			res, err := runConformance(ctx, nodeBin, suite, url, out)
			runs[name] <- run{res, err}
		}()
	}
	d, r := <-runs["direct"], <-runs["reach"]
	if d.err != nil {
		t.Fatalf("conformance suite against the fixture server: %v", d.err)
	}
	if r.err != nil {
		t.Fatalf("conformance suite against reach: %v", r.err)
	}
	if len(d.res) == 0 {
		t.Fatal("the conformance suite ran no scenarios")
	}

	passed := func(m map[string]conformanceResult) (n int) {
		for _, c := range m {
			if c.pass() {
				n++
			}
		}
		return n
	}
	t.Logf("MCP conformance (server scenarios): direct %d/%d, through reach %d/%d", passed(d.res), len(d.res), passed(r.res), len(r.res))
	strict := os.Getenv("REACH_CONFORMANCE_STRICT") != ""
	var lost, known []string
	for _, name := range slices.Sorted(maps.Keys(d.res)) {
		dc, rc := d.res[name], r.res[name]
		gap, isGap := conformanceKnownGaps[name]
		switch {
		case !dc.pass():
			t.Logf("  %-36s fails directly too: %s", name, dc.why())
		case !rc.pass() && isGap && !strict:
			known = append(known, name)
			t.Logf("  %-36s fails through reach (known gap: %s): %s", name, gap, rc.why())
		case !rc.pass():
			lost = append(lost, name)
			t.Errorf("  %-36s passes directly but fails through reach: %s", name, rc.why())
		case isGap:
			t.Logf("  %-36s passes through reach this time (known gap: %s); drop it from conformanceKnownGaps once it passes every time", name, gap)
		}
	}
	if len(known) > 0 {
		t.Logf("reach loses %d scenario(s) to known gaps (REACH_CONFORMANCE_STRICT=1 fails on them): %s", len(known), strings.Join(known, ", "))
	}
	if len(lost) > 0 {
		t.Errorf("reach loses %d scenario(s) the fixture server passes: %s", len(lost), strings.Join(lost, ", "))
	}
}

// conformanceKnownGaps are the scenarios the fixture server passes and
// reach does not yet, each with why. TestConformance reports them without
// failing (unless REACH_CONFORMANCE_STRICT is set); any other scenario
// reach loses fails the test. Remove an entry when its gap is closed.
var conformanceKnownGaps = map[string]string{}

// conformanceCheck is one check of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, ...
	ErrorMessage string `json:"errorMessage"`
}

// conformanceResult is a scenario's checks.
type conformanceResult []conformanceCheck

// pass is the suite's own verdict on a scenario: no failed check and at
// least one successful one.
func (r conformanceResult) pass() bool {
	ok := false
	for _, c := range r {
		switch c.Status {
		case "FAILURE":
			return false
		case "SUCCESS":
			ok = true
		}
	}
	return ok
}

// why sums up a scenario's failed checks.
func (r conformanceResult) why() string {
	var out []string
	for _, c := range r {
		if c.Status == "FAILURE" {
			out = append(out, c.ID+": "+c.ErrorMessage)
		}
	}
	if len(out) == 0 {
		return "no successful check"
	}
	return strings.Join(out, "; ")
}

// scenarioDirRE strips the timestamp the suite appends to a scenario's
// result folder.
var scenarioDirRE = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// runConformance runs every server scenario of the suite against url and
// reads the results it saves in out.
func runConformance(ctx context.Context, nodeBin, suite, url, out string) (map[string]conformanceResult, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(nodeBin, "node"), suite, "server", "--suite", "all", "--url", url, "-o", out)
	cmd.Env = append(os.Environ(), "PATH="+nodeBin+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	outText, err := cmd.CombinedOutput()
	// The suite exits non-zero when any check fails; the results say which.
	if ctx.Err() != nil {
		return nil, errors.Join(ctx.Err(), errors.New(string(outText)))
	}
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if len(files) == 0 {
		return nil, errors.Join(err, errors.New("no checks.json written; output:\n"+string(outText)))
	}
	res := map[string]conformanceResult{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var checks conformanceResult
		if err := json.Unmarshal(data, &checks); err != nil {
			checks = conformanceResult{{ID: "checks.json", Status: "FAILURE", ErrorMessage: err.Error()}}
		}
		// Results are in server-<scenario>-<timestamp>.
		name := strings.TrimPrefix(scenarioDirRE.ReplaceAllString(filepath.Base(filepath.Dir(f)), ""), "server-")
		res[name] = checks
	}
	return res, nil
}
