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
	"github.com/spf13/pflag"

	"github.com/agentreach/reach/cmd/reach/internal/stopsig"
	"github.com/agentreach/reach/internal/names"
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
	// An unknown --flag close to one the command takes is named, as an
	// unknown key of the configuration is: --limt said "unknown flag"
	// alone.
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		flags := func(yield func(string) bool) {
			stop := false
			visit := func(f *pflag.Flag) {
				if !stop && !f.Hidden && !yield(f.Name) {
					stop = true
				}
			}
			cmd.LocalFlags().VisitAll(visit)
			cmd.InheritedFlags().VisitAll(visit)
		}
		if near := names.Closest(name, flags, 1); len(near) == 1 {
			return fmt.Errorf("%w (did you mean --%s?); usage: %s (%s --help lists its flags)", err, near[0], cmd.UseLine(), cmd.CommandPath())
		}
	}
	return fmt.Errorf("%w; usage: %s (%s --help lists its flags)", err, cmd.UseLine(), cmd.CommandPath())
}
