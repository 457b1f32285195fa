package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newAudit() *cobra.Command {
	return &cobra.Command{Use: "audit", Short: "Inspect and verify the audit log", RunE: func(*cobra.Command, []string) error {
		return errors.New("audit: not built yet")
	}}
}
