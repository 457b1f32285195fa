package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/spf13/cobra"
)

// defaultAuditData is the data folder the audit commands read when --data
// is not given: the gateway's default.
const defaultAuditData = ".reach"

func newAudit() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Inspect and verify the audit log",
		Long: `The audit log is the tamper-evident record of every decision: it lives in
the SQLite database ` + store.DefaultFile + ` in the data folder (--data, default ./` + defaultAuditData + `).`,
	}
	var data string
	cmd.PersistentFlags().StringVar(&data, "data", defaultAuditData, "the data folder that holds "+store.DefaultFile)

	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check the audit log's hash chain",
		Long: `Walks the whole hash chain and checks every event and checkpoint. Exits 0
and prints "chain ok: N events" when nothing was edited, deleted, reordered or
inserted; otherwise exits non-zero, naming the first bad event's seq and what
is wrong with it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openAuditStore(cmd, data)
			if err != nil {
				return err
			}
			defer st.Close()
			rep, err := audit.Verify(cmd.Context(), st)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "chain ok: %d events", rep.Events)
			if rep.Events > 0 {
				fmt.Fprintf(out, " (head %s, %d checkpoints matched)", audit.FormatHash(rep.Head), rep.Checkpoints)
			}
			fmt.Fprintln(out)
			return nil
		},
	}

	var asJSON bool
	show := &cobra.Command{
		Use:   "show REQUEST",
		Short: "Print a request's audit events, step by step",
		Long: `Prints the events of one request in order: seq, time, frame, parent, kind,
name, decision, a preview of the arguments and of the result, tokens, latency,
and why a step was refused or failed. With --json, one JSON object per event.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openAuditStore(cmd, data)
			if err != nil {
				return err
			}
			defer st.Close()
			evs, err := audit.Show(cmd.Context(), st, args[0])
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				return fmt.Errorf("no audit events for request %s in %s", args[0], st.Path())
			}
			if asJSON {
				return writeEventsJSON(cmd.OutOrStdout(), evs)
			}
			return writeEvents(cmd.OutOrStdout(), evs)
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per event")

	cmd.AddCommand(verify, show)
	return cmd
}

// openAuditStore opens the store in dir, which must exist.
func openAuditStore(cmd *cobra.Command, dir string) (*store.SQLite, error) {
	st, err := store.Open(cmd.Context(), dir, &store.SQLiteOptions{NoCreate: true})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no audit log in %s: %s does not exist (use --data to name the data folder)",
			dir, filepath.Join(dir, store.DefaultFile))
	}
	return st, err
}

// writeEvents prints events as a table, one row per step.
func writeEvents(w io.Writer, evs []*audit.Event) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tFRAME\tPARENT\tKIND\tNAME\tDECISION\tARGS\tRESULT\tTOKENS\tLATENCY\tWHY")
	for _, e := range evs {
		tokens := "-"
		if e.Tokens != 0 {
			tokens = fmt.Sprint(e.Tokens)
		}
		latency := "-"
		if e.Latency != 0 {
			latency = e.Latency.Round(time.Microsecond).String()
		}
		why := e.Message
		if e.Code != "" {
			why = e.Code + ": " + why
		}
		if e.Guard != "" {
			why = e.Guard + "/" + why
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			e.Seq, e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), orDash(e.Frame), orDash(e.Parent), orDash(e.Kind),
			orDash(e.Name), orDash(e.Decision), orDash(auditPreview(string(e.Args), 48)), orDash(auditPreview(e.Result, 40)),
			tokens, latency, auditPreview(why, 80))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// auditPreview puts s on one line and cuts it to n runes.
func auditPreview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// writeEventsJSON prints one JSON object per event: its fields, and where
// it sits in the chain (seq, time, request, prev_hash, hash).
func writeEventsJSON(w io.Writer, evs []*audit.Event) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, e := range evs {
		data, _ := e.MarshalJSON()
		obj := map[string]json.RawMessage{}
		if err := json.Unmarshal(data, &obj); err != nil {
			return err
		}
		for k, v := range map[string]any{"seq": e.Seq, "time": e.Time.UTC(), "request": e.Request,
			"prev_hash": audit.FormatHash(e.PrevHash), "hash": audit.FormatHash(e.Hash)} {
			obj[k], _ = json.Marshal(v)
		}
		if err := enc.Encode(obj); err != nil {
			return err
		}
	}
	return nil
}
