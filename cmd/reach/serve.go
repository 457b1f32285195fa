package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newServe() *cobra.Command {
	return &cobra.Command{Use: "serve", Short: "Run the gateway", RunE: func(*cobra.Command, []string) error {
		return errors.New("serve: not built yet")
	}}
}

func newValidate() *cobra.Command {
	return &cobra.Command{Use: "validate", Short: "Check a configuration without serving", RunE: func(*cobra.Command, []string) error {
		return errors.New("validate: not built yet")
	}}
}

func newStdio() *cobra.Command {
	return &cobra.Command{Use: "stdio", Short: "Serve MCP over stdio", RunE: func(*cobra.Command, []string) error {
		return errors.New("stdio: not built yet")
	}}
}
