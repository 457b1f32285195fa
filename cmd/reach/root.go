package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "reach",
		Short:         "Agent-Reach: the runtime and gateway between LLM agents and their tools",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newVersion(), newBench(), newServe(), newValidate(), newStdio(), newAudit(), newDemo(), newKeys(), newApprovals(), newToolsCmd(), newDeadLetters(), newGraph(), newRequests())
	return root
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version
			if v == "" {
				v = "(devel)"
				if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
					v = bi.Main.Version
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "reach", v)
			return nil
		},
	}
}

// defaultData is the data folder when --data is not given.
const defaultData = "./.reach"
