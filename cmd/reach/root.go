package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentreach/reach/internal/buildinfo"
	"github.com/agentreach/reach/internal/config"
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
	root.AddCommand(newVersion(), newBench(), newServe(), newValidate(), newStdio(), newAudit(), newDemo(), newKeys(), newApprovals(), newToolsCmd(), newDeadLetters(), newGraph(), newRequests(), newHealth(), newPolicies())
	for _, c := range root.Commands() {
		if logCommands[c.Name()] {
			addLogFlags(c)
		}
	}
	refuseUnknownSubcommands(root)
	showUsageOnWrongArgs(root)
	root.SetFlagErrorFunc(flagHelp)
	return root
}

// showUsageOnWrongArgs adds a command's usage line to cobra's error for
// the wrong number of arguments: `reach graph` alone said "accepts 1
// arg(s), received 0", not which argument (SilenceUsage keeps the usage
// out of every other error).
func showUsageOnWrongArgs(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		showUsageOnWrongArgs(sub)
	}
	if args := cmd.Args; args != nil && cmd.Runnable() {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				if strings.HasPrefix(err.Error(), "unknown command") {
					return err // refuseUnknownSubcommands says what it may mean
				}
				return fmt.Errorf("%w; usage: %s", err, c.UseLine())
			}
			return nil
		}
	}
}

// refuseUnknownSubcommands makes a word that names no subcommand of a
// group an error, with the subcommands it may mean, as the root's are:
// cobra takes it for an argument of the group, and a group that runs
// nothing itself printed its help and exited 0, so that a script's
// `reach approvals aprove ID` passed for done.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !cmd.HasParent() || !cmd.HasSubCommands() {
		return
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // what the root's suggestions use
	}
	unknown := func(c *cobra.Command, args []string) error {
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return errors.New(msg)
	}
	if !cmd.Runnable() {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return unknown(c, args)
		}
		return
	}
	// A group that runs (requests lists, deadletters lists) and takes no
	// arguments of its own.
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil && len(a) > 0 {
				return unknown(c, a)
			}
			return args(c, a)
		}
	}
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

// dataGroup is cmd, a command whose subcommands work on the gateway's data
// folder, with the --data flag they share (default .reach, serve's:
// config.DefaultData) bound to data.
func dataGroup(data *string, cmd *cobra.Command) *cobra.Command {
	cmd.PersistentFlags().StringVar(data, "data", config.DefaultData, "the gateway's data folder")
	return cmd
}

// configFlag adds --config to cmd, a command whose subcommands read the
// gateway's data folder or its PostgreSQL store (audit, tools,
// deadletters): with it they read those of that configuration (its data:,
// relative to the file, or its store:, its ${VAR} expanded), unless --data
// or --store names one. Without it a user whose configuration names its
// data folder or store had to spell it again, and --config, which keys and
// serve take, was an unknown flag.
func configFlag(cmd *cobra.Command, data *string) {
	var path string
	cmd.PersistentFlags().StringVar(&path, "config", "", "the gateway's configuration: its data folder, or its PostgreSQL store (unless --data or --store names one)")
	cmd.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		st := c.Flag("store")
		if st != nil && st.Changed {
			return nil
		}
		if path == "" || c.Flag("data").Changed {
			return dataIsFolder(*data)
		}
		cfg, err := config.LoadState(path)
		if err != nil {
			return err
		}
		if url := cfg.Store.Reveal(); url != "" {
			if st == nil { // a command that reads no store (deadletters retry)
				return nil
			}
			return st.Value.Set(url)
		}
		*data = cfg.DataDir()
		return dataIsFolder(*data)
	}
}

// dataIsFolder is nil unless data names something that is not a folder (the
// database file itself, say), which it says, with the flag that names the
// folder: the commands said "stat FILE/reach.db: not a directory".
func dataIsFolder(data string) error {
	st, err := os.Stat(data)
	if err != nil || st.IsDir() {
		return nil // a folder, or none: each command says what it finds there
	}
	return fmt.Errorf("%s is a file, not a data folder: name the folder that holds the gateway's data (reach.db, keys.json) with --data DIR, the data line reach serve printed (default %s)", printable(data), config.DefaultData)
}

// writeJSON writes v as indented JSON and a newline, what --json prints.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
