package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentreach/reach/internal/policy"
	"github.com/spf13/cobra"
)

// newPolicies is `reach policies`: the shipped Cedar policies, to copy and
// edit. A user who adds a policy file replaces them, and had to copy them
// from the docs (policy.WriteDefault is the library's).
func newPolicies() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policies",
		Short: "Print the shipped Cedar policies, to start a policy file from",
		Args:  cobra.NoArgs,
	}
	var out string
	def := &cobra.Command{
		Use:   "default",
		Short: "Print the shipped default policies (or write them to a new file with -o)",
		Long: `Prints the Cedar policies reach applies with auth: and no policy file:
reads for authenticated principals, writes with the user's approval,
high-risk calls with the user's and a reviewer's, nothing forbidden, and
resources, prompts and completions for authenticated principals; with
examples of an argument rule, a scene rule and a role rule as comments.
A policy file replaces them all, so start one from them:

  mkdir policies && reach policies default -o policies/default.cedar

and add policy: {path: ./policies/} to the configuration.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				_, err := cmd.OutOrStdout().Write(policy.DefaultSource())
				return err
			}
			if err := policy.WriteDefault(out); errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s exists, and is not overwritten: name a new file, or print the policies (without -o) to compare them with it", out)
			} else if err != nil {
				return err
			}
			cmd.PrintErrf("wrote the default policies to %s; point the configuration at it (policy: {path: ...}) and edit it\n", out)
			return nil
		},
	}
	def.Flags().StringVarP(&out, "output", "o", "", "write them to this file (it must not exist) instead of stdout")
	cmd.AddCommand(def)
	return cmd
}
