package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach/internal/policy/pin"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// TestSec36ToolsListShowsUnlisted: `reach tools list` shows each pin's
// upstream, and a pin its upstream no longer lists as "unlisted since"
// (kept, so that a definition coming back changed is held); a listed one
// is not so marked. Before, a pin of a resource long gone looked like
// any other.
func TestSec36ToolsListShowsUnlisted(t *testing.T) {
	data := t.TempDir()
	st, err := sqlite.Open(t.Context(), data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := pin.OpenStore(t.Context(), st, pin.Path(data))
	if err != nil {
		t.Fatal(err)
	}
	of := func(string) string { return "docs" }
	docs := []pin.Listing{{Upstream: "docs", Content: true}}
	if _, err := s.CheckListings(map[string]pin.Definition{"resource:doc://x": {Description: "x"}, "resource:doc://y": {Description: "y"}}, of, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckListings(map[string]pin.Definition{"resource:doc://x": {Description: "x"}}, of, docs); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, newToolsCmd, "list", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	var x, y string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "resource:doc://x"):
			x = line
		case strings.HasPrefix(line, "resource:doc://y"):
			y = line
		}
	}
	if !strings.Contains(out, "UPSTREAM") || !strings.Contains(y, "docs") || !strings.Contains(y, "unlisted since") {
		t.Errorf("tools list: doc://y's line %q, want its upstream and unlisted since\n%s", y, out)
	}
	if x == "" || strings.Contains(x, "unlisted") {
		t.Errorf("tools list: doc://x's line %q, want it listed\n%s", x, out)
	}
	// reach tools forget --unlisted drops doc://y's pin, not doc://x's.
	if out, _, err := runCmd(t, newToolsCmd, "forget", "--unlisted", "--data", data); err != nil || !strings.Contains(out, "resource:doc://y") || strings.Contains(out, "doc://x") {
		t.Fatalf("forget --unlisted: %v\n%s", err, out)
	}
	if _, ok, _ := s.Get("resource:doc://y"); ok {
		t.Error("doc://y's pin kept after reach tools forget --unlisted")
	}
	if _, ok, _ := s.Get("resource:doc://x"); !ok {
		t.Error("doc://x's pin, listed, dropped by reach tools forget --unlisted")
	}
	if _, _, err := runCmd(t, newToolsCmd, "forget", "resource:doc://nope", "--data", data); err == nil {
		t.Error("forgetting a pin that is not there succeeded")
	}
}

// TestSec36CLIKeyStaysOutOfOutput: the API key of the commands that talk
// to a gateway (reach requests here) is never printed: a gateway address
// with the key in it (http://user:KEY@host, as some write it) is refused
// before anything is sent, shown without it; --key - reads the key from standard
// input (not the process's arguments, which other users of the machine
// see), and a key on the command line is warned about. Before, the address
// was printed whole, key and all, and the key sent as Basic credentials,
// over plain http to a host off loopback too.
func TestSec36CLIKeyStaysOutOfOutput(t *testing.T) {
	const secret = "rk_sec36_userinfo_secret"
	t.Setenv("REACH_API_KEY", "")
	t.Setenv("REACH_ALLOW_PLAIN_HTTP", "")
	for _, addr := range []string{"http://alice:" + secret + "@127.0.0.1:1", "http://alice:" + secret + "@192.0.2.1:9"} {
		t.Setenv("REACH_API", addr)
		_, errOut, err := runCmd(t, newRequests)
		if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(errOut, secret) || !strings.Contains(err.Error(), "REACH_API_KEY") {
			t.Errorf("an address holding the key: %v / %q, want it refused before anything is sent, saying where the key goes, without the key", err, errOut)
		}
	}
	t.Setenv("REACH_API", "")

	var seen atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"requests":[]}`))
	}))
	defer srv.Close()
	cmd := newRequests()
	var out, errBuf bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errBuf)
	cmd.SetIn(strings.NewReader("rk_from_stdin\n"))
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--api", srv.URL, "--key", "-"})
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("--key -: %v %s", err, errBuf.String())
	}
	if got, _ := seen.Load().(string); got != "Bearer rk_from_stdin" {
		t.Errorf("--key - sent %q, want the key read from standard input", got)
	}
	if strings.Contains(errBuf.String(), "command line") {
		t.Errorf("--key - warned about the command line: %s", errBuf.String())
	}
	_, errOut, err := runCmd(t, newRequests, "--api", srv.URL, "--key", "rk_on_argv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "command line") || !strings.Contains(errOut, "REACH_API_KEY") || strings.Contains(errOut, "rk_on_argv") {
		t.Errorf("--key on the command line: stderr %q, want a warning naming REACH_API_KEY, without the key", errOut)
	}
}

// TestSec36GraphFileOwnerOnly: reach graph -o writes the graph (which
// holds the request's arguments and results) readable by its owner alone,
// over an existing file too. Before, os.WriteFile kept an existing file's
// mode: a graph written over a 0644 file was readable by every user.
func TestSec36GraphFileOwnerOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>refund_order {"card":"4111"}</text></svg>`))
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "g.svg")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := runCmd(t, newGraph, "r1", "--api", srv.URL, "-o", out); err != nil {
		t.Fatalf("graph -o: %v %s", err, errOut)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the graph written over a 0644 file has mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "refund_order") {
		t.Errorf("the graph file holds %q", b)
	}
}

// TestSec36PinsKeptWithUpstreamThroughServe: two runs of `reach serve`
// on one data folder, over the TypeScript SDK upstream of
// TestFW33bPinnedToolThroughServe: the first, with it configured as kv,
// pins its tools under kv (`reach tools list` shows the upstream); the
// second, with it configured as kv2 only, pins kv2's and keeps kv's,
// shown unlisted (a pin dropped at a start without its upstream would take
// a changed definition listed again under its key for a first sight);
// `reach tools forget --unlisted` drops them.
func TestSec36PinsKeptWithUpstreamThroughServe(t *testing.T) {
	k := newFW33bKit(t)
	data := t.TempDir()
	first := k.serve(t, writeConfig(t, k.upstream(false)), data)
	waitFor(t, "kv's tools pinned", func() bool {
		out, _, err := cli(t, "tools", "list", "--data", data)
		return err == nil && strings.Contains(out, "kv__note") && strings.Contains(out, " kv ")
	})
	first.stop(t)

	renamed := strings.Replace(k.upstream(false), "name: kv\n", "name: kv2\n", 1)
	second := k.serve(t, writeConfig(t, renamed), data)
	waitFor(t, "kv2's tools pinned, kv's noted unlisted", func() bool {
		out, _, err := cli(t, "tools", "list", "--data", data)
		return err == nil && strings.Contains(out, "kv2__note") && regexp.MustCompile(`kv__note .*unlisted since`).MatchString(out)
	})
	second.stop(t)
	out, errOut, err := cli(t, "tools", "forget", "--unlisted", "--data", data)
	if err != nil || !strings.Contains(out, "dropped the pin of kv__note") {
		t.Errorf("reach tools forget --unlisted: %v\n%s%s\nwant kv's pins dropped", err, out, errOut)
	}
	out, errOut, err = cli(t, "tools", "list", "--data", data)
	if err != nil || strings.Contains(out, "kv__note") || !strings.Contains(out, "kv2__note") {
		t.Errorf("reach tools list after forget --unlisted: %v\n%s%s\nwant kv2's pins alone", err, out, errOut)
	}
}
