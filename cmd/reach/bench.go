package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newBench() *cobra.Command {
	bench := &cobra.Command{Use: "bench", Short: "Benchmarks"}
	bench.AddCommand(&cobra.Command{
		Use:   "loops DIR",
		Short: "Run the loop benchmark on the traces in DIR",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("bench loops: not built yet")
		},
	})
	return bench
}
