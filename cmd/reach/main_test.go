package main

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach/cmd/reach/internal/stopsig"
	"github.com/agentreach/reach/internal/crashpoint"
	"github.com/agentreach/reach/internal/pgtest"
	"github.com/agentreach/reach/internal/store/sqlcore"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// The crash test starts this binary as a real `reach serve` process.
	if os.Getenv("REACH_AS_CLI") == "1" {
		reexecServe = true // as main: reach serve runs itself again under sysmonAwake
		heldWindows()
		if f := os.Getenv("REACH_TEST_STARTED"); f != "" {
			os.WriteFile(f, nil, 0o600) // main runs: its handlers are in place
		}
		err := run(stopsig.Context(), os.Args[1:], os.Stdout, os.Stderr)
		if err != nil {
			printError(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	stopsig.Stop() // an interrupt ends the tests
	// Under pgtest.Main, the tests' PostgreSQL clusters are copies of one
	// initdb'd folder (no initdb each), removed after. (Called here, not
	// in boundedHTTP.Run: TestKillMatrix takes a test calling Run for one
	// reaching pgtest.)
	testscript.Main(boundedHTTP{func() int { return pgtest.Main(m) }}, map[string]func(){
		"reach": func() {
			if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
				printError(os.Stderr, err)
				os.Exit(1)
			}
		},
	})
}

// heldWindows widens, in a life armed at "batch.held" (the crash tests'
// REACH_TEST_CRASH_AT), the windows in which a write joins a batch that
// the store's writer holds open: on SQLite, a hold for the calls in
// flight lasts until each wrote or none wrote for a second (not 1 ms),
// and on PostgreSQL a batch waits up to a second (not 500 µs) for its
// claims' checkpoints. Under a loaded machine the calls' next writes come
// later than the product's windows, which then close unjoined (and
// SQLite's writer stops holding for up to 64 batches): the point would be
// reached by chance. What a kill there leaves is the same whatever the
// windows; only this test binary, and only armed there, widens them.
func heldWindows() {
	if point, _, _ := strings.Cut(os.Getenv(crashpoint.Env), "#"); point != "batch.held" {
		return
	}
	sqlite.Hold = time.Minute
	sqlcore.HoldIdle = time.Second
	sqlcore.Linger = time.Second
}

// TestScripts runs the CLI end to end: testdata/script/*.txtar.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}

// boundedHTTP runs the tests with http.DefaultClient bounded: the tests
// call real reach serve processes with http.Get, http.Post and
// http.DefaultClient, and one that accepted a request and never answered
// (a deadlock, a process stopped by a crash point) hung the whole test run
// until go test's timeout (30 minutes in CI) instead of failing its test.
// No call of these tests takes a minute; reach itself never uses
// http.DefaultClient. Only the tests' process: testscript's commands run
// without it.
type boundedHTTP struct{ run func() int } // m.Run, under pgtest.Main

func (b boundedHTTP) Run() int {
	http.DefaultClient.Timeout = 2 * time.Minute
	return b.run()
}
