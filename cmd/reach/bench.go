package main

import (
	"fmt"
	"io"
	"os"

	"github.com/agentreach/reach/internal/loopbench"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newBench() *cobra.Command {
	bench := &cobra.Command{Use: "bench", Short: "Benchmarks"}
	var asJSON, strict bool
	var minDetection float64
	loops := &cobra.Command{
		Use:   "loops DIR",
		Short: "Run the loop benchmark on the traces in DIR",
		Long: `Replays every *.json trace in DIR (loop benchmark format v1) through the
runtime's guard chain, scores the first refusal against each trace's label,
and prints a table per kind for reach and the baselines (recursion_limit,
consecutive_3, name_stack). With --json, prints one line per trace:
{"id": ..., "flagged": <event id or null>, "reason": ...}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if st, err := os.Stat(args[0]); err != nil || !st.IsDir() {
				// "no *.json traces in DIR" left a mistyped folder unsaid.
				return fmt.Errorf("%s is not a folder of traces: name the folder that holds the *.json traces (a trace file's folder, not the file)", printable(args[0]))
			}
			traces, err := loopbench.LoadDir(args[0])
			if err != nil {
				return err
			}
			opts := &loopbench.Options{}
			if f, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				opts.Progress = func(done, total int) {
					fmt.Fprintf(f, "\rreplaying traces: %d/%d", done, total)
					if done == total {
						fmt.Fprint(f, "\r\033[K")
					}
				}
			}
			report := loopbench.Run(traces, opts)
			out := cmd.OutOrStdout()
			if asJSON {
				if err := report.WriteJSONLines(out, "reach"); err != nil {
					return err
				}
			} else {
				report.WriteTable(out)
			}
			if strict {
				return checkStrict(out, report, minDetection)
			}
			return nil
		},
	}
	loops.Flags().BoolVar(&asJSON, "json", false, "print one JSON line per trace and nothing else")
	loops.Flags().BoolVar(&strict, "strict", false, "exit non-zero on any false kill or a detection rate below --min-detection")
	loops.Flags().Float64Var(&minDetection, "min-detection", 0.95, "with --strict, the lowest detection rate that passes")
	bench.AddCommand(loops)
	return bench
}

func checkStrict(w io.Writer, r *loopbench.Report, min float64) error {
	o := r.Overall("reach")
	if o.FalseKills > 0 || (o.LoopTraces > 0 && o.Detection < min) {
		return fmt.Errorf("loop benchmark below the bar: detection %.2f (want >= %.2f), %d false kills (want 0)", o.Detection, min, o.FalseKills)
	}
	return nil
}
