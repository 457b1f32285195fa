// Command reach is the Agent-Reach CLI: the gateway, benchmarks and tools
// around the runtime.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentreach/reach/cmd/reach/internal/stopsig"
)

// The stop signals (serve shuts down, finishing what is in flight) are
// taken by package stopsig from the program's start: see there.
func main() {
	reexecServe = true
	if err := run(stopsig.Context(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		printError(os.Stderr, err)
		os.Exit(1)
	}
}

// printError prints the error that ends the command. An error may quote an
// upstream or the gateway (a tool server's answer, an API message), so it
// is escaped ([printableLines]) like everything else they send.
func printError(w io.Writer, err error) {
	fmt.Fprintln(w, "reach:", printableLines(err.Error()))
}

// run executes the CLI with args, writing to stdout and stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "required flag(s) ") {
		// Cobra checks required flags after parsing them, past the flag
		// error function: say here, as there, where the flags are listed.
		return flagHelp(cmd, err)
	}
	return err
}

// flagHelp adds to a flag's error (unknown, malformed, required and
// missing) the command's usage and where its flags are listed: `reach
// serve --bogus` said "unknown flag: --bogus" alone.
func flagHelp(cmd *cobra.Command, err error) error {
	return fmt.Errorf("%w; usage: %s (%s --help lists its flags)", err, cmd.UseLine(), cmd.CommandPath())
}
