package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentreach/reach/internal/buildinfo"
	"github.com/spf13/cobra"
)

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "reach",
		Short:         "Agent-Reach: the runtime and gateway between LLM agents and their tools",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.Version = buildinfo.Read().String() // reach --version
	root.SetVersionTemplate("{{.Version}}\n")
	addLogFlags(root)
	root.AddCommand(newVersion(), newBench(), newServe(), newValidate(), newStdio(), newAudit(), newDemo(), newKeys(), newApprovals(), newToolsCmd(), newDeadLetters(), newGraph(), newRequests(), newHealth())
	return root
}

func newVersion() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version: the module version and the VCS revision built from",
		Long: `Prints the version of this reach binary: the module version (v1.2.3 when
installed with go install github.com/agentreach/reach/cmd/reach@v1.2.3, a
pseudo-version or "(devel)" for a build in a clone), the VCS revision and its
time when the build stamped them, and the Go version. reach --version prints
the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildinfo.Read()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			fmt.Fprintln(cmd.OutOrStdout(), info)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print it as JSON")
	return cmd
}

// defaultData is the data folder when --data is not given.
const defaultData = "./.reach"

// dataGroup is cmd, a command whose subcommands work on the gateway's data
// folder, with the --data flag they share (default ./.reach) bound to data.
func dataGroup(data *string, cmd *cobra.Command) *cobra.Command {
	cmd.PersistentFlags().StringVar(data, "data", defaultData, "the gateway's data folder")
	return cmd
}

// writeJSON writes v as indented JSON and a newline, what --json prints.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
