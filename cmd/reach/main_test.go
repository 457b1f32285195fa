package main

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/agentreach/reach/cmd/reach/internal/stopsig"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// The crash test starts this binary as a real `reach serve` process.
	if os.Getenv("REACH_AS_CLI") == "1" {
		reexecServe = true // as main: reach serve runs itself again under sysmonAwake
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
	testscript.Main(boundedHTTP{m}, map[string]func(){
		"reach": func() {
			if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
				printError(os.Stderr, err)
				os.Exit(1)
			}
		},
	})
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
type boundedHTTP struct{ m *testing.M }

func (b boundedHTTP) Run() int {
	http.DefaultClient.Timeout = 2 * time.Minute
	return b.m.Run()
}
