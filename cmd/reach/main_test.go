package main

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"reach": func() {
			if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
				os.Stderr.WriteString("reach: " + err.Error() + "\n")
				os.Exit(1)
			}
		},
	})
}

// TestScripts runs the CLI end to end: testdata/script/*.txtar.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}
