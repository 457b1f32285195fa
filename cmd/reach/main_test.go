package main

import (
	"context"
	"os"
	"os/signal"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// The crash test starts this binary as a real `reach serve` process.
	if os.Getenv("REACH_AS_CLI") == "1" {
		reexecServe = true // as main: reach serve runs itself again under sysmonAwake
		ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
		err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		if err != nil {
			printError(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testscript.Main(m, map[string]func(){
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
