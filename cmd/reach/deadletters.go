package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/spf13/cobra"
)

func newDeadLetters() *cobra.Command {
	var data, state, storeURL string
	var asJSON bool
	// listing makes c list the dead letters, as the group itself and its
	// "list" do.
	listing := func(c *cobra.Command) *cobra.Command {
		c.Args = cobra.NoArgs
		c.RunE = func(cmd *cobra.Command, _ []string) error { return listDeadLetters(cmd, data, storeURL, state, asJSON) }
		c.Flags().StringVar(&state, "state", store.DeadOpen, "open, taken (an operator's retry or dismissal holds it), retried, resolved, or all")
		c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
		c.Flags().StringVar(&storeURL, "store", "", "the PostgreSQL database of gateways that share it (postgres://USER@HOST:PORT/DB?sslmode=...), instead of --data")
		return c
	}
	cmd := listing(dataGroup(&data, &cobra.Command{
		Use:   "deadletters",
		Short: "List, retry or dismiss compensations that failed",
		Long: `A compensation (the undo of a write) that failed after its retries is a dead
letter: it waits in the data folder's store for an operator. "list" shows them;
"retry ID" asks the running gateway to run the undo again (under its
idempotency key, so it runs at most once more); "dismiss ID --note" records
that it was settled by hand. Every action is written to the audit log.
Gateways that share a PostgreSQL store keep their dead letters there: list
them with --store postgres://...; retry and dismiss go through a gateway.`,
	}))
	configFlag(cmd, &data)
	list := listing(&cobra.Command{Use: "list", Short: "List dead letters"})

	var note, by string
	dismiss := &cobra.Command{
		Use:   "dismiss ID",
		Short: "Record that a dead letter was settled by hand",
		Long: `Records that a dead letter was settled by hand. The running gateway (--api)
takes it out of its queue and records the dismissal as the authenticated
principal. When no gateway answers there, the dismissal is written to the data
folder's store (--data) as --by; a gateway started later does not queue it.`,
		Args: cobra.ExactArgs(1),
	}
	dismissClient := apiFlags(dismiss)
	dismiss.RunE = func(cmd *cobra.Command, args []string) error {
		if strings.TrimSpace(note) == "" {
			return fmt.Errorf("say how it was settled: --note \"refunded by hand in the billing console\"")
		}
		c := dismissClient()
		payload, _ := json.Marshal(map[string]string{"note": note})
		_, err := c.do(cmd.Context(), http.MethodPost, "/v1/deadletters/"+url.PathEscape(args[0])+"/dismiss", payload, nil)
		switch {
		case err == nil:
			fmt.Fprintf(cmd.OutOrStdout(), "dead letter %s dismissed by the gateway at %s\n", printable(args[0]), printable(c.base))
			return nil
		case !errors.Is(err, syscall.ECONNREFUSED):
			return fmt.Errorf("dismiss refused: %w", err)
		}
		d, err := dismissStored(cmd.Context(), data, args[0], note, by)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "dead letter %s dismissed by %s in %s (no gateway answers at %s)\n", printable(d.ID), printable(by), printable(data), printable(c.base))
		return nil
	}
	dismiss.Flags().StringVar(&note, "note", "", "how it was settled (required)")
	dismiss.Flags().StringVar(&by, "by", "operator", "who settled it, when no gateway runs (the gateway records its authenticated principal)")

	retry := &cobra.Command{
		Use:   "retry ID",
		Short: "Ask the running gateway to run a dead letter's undo again",
		Args:  cobra.ExactArgs(1),
	}
	client := apiFlags(retry)
	retry.RunE = func(cmd *cobra.Command, args []string) error {
		var body map[string]any
		if _, err := client().do(cmd.Context(), http.MethodPost, "/v1/deadletters/"+url.PathEscape(args[0])+"/retry", nil, &body); err != nil {
			return fmt.Errorf("retry refused: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "dead letter %s retried: %s\n", printable(args[0]), printable(fmt.Sprint(body["status"])))
		return nil
	}

	cmd.AddCommand(list, dismiss, retry)
	return cmd
}

// dismissStored settles dead letter id in the data folder's store as
// dismissed by hand, through the same queue a gateway's runtime uses (so a
// gateway retrying it meanwhile refuses one of the two), for when no
// gateway runs, and audits it. The note is kept masked, as a gateway keeps
// it (by the rules alone: the secrets of a configuration are not known
// here).
func dismissStored(ctx context.Context, data, id, note, by string) (*reach.DeadLetter, error) {
	if red, err := redact.New(nil); err == nil {
		note = red.RedactString(note)
	}
	st, err := openDeadLetters(ctx, data)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	d, err := reach.DismissDeadLetter(ctx, durable.New(st, nil, nil), id, by, note)
	switch {
	case errors.Is(err, reach.ErrDeadLetterID):
		return nil, fmt.Errorf("dead letter id %q: want the id shown by reach deadletters", id)
	case errors.Is(err, reach.ErrNoDeadLetter):
		return nil, fmt.Errorf("no open dead letter %s", id)
	case err != nil:
		return nil, err
	}
	log, err := audit.New(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	// Of the tenant the dead letter keeps (its request's owner when it was
	// added), as a gateway's dismissal is: that tenant sees how its undo
	// was settled, and by whom.
	_, err = log.Append(ctx, &audit.Event{Request: d.Request, Kind: "dead_letter", Name: d.Tool,
		Decision: "dismissed", Principal: by, Tenant: d.Tenant, Message: note})
	return d, err
}

// openDeadLetters opens the data folder's store, which holds the dead
// letters; one that is not there is said so, with the flag that names
// another, as the audit commands say it.
func openDeadLetters(ctx context.Context, data string) (*sqlite.Store, error) {
	st, err := sqlite.Open(ctx, data, &sqlite.Options{NoCreate: true})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no store in %s: %s does not exist (use --data to name the gateway's data folder)", data, filepath.Join(data, sqlite.DefaultFile))
	}
	if err != nil {
		return nil, fmt.Errorf("opening the store in %s: %w", data, err)
	}
	return st, nil
}

// deadLetterLister is what listDeadLetters reads: a data folder's SQLite
// or the PostgreSQL store of --store.
type deadLetterLister interface {
	ListDeadLetters(ctx context.Context, state string) ([]*store.DeadLetter, error)
	Close() error
}

func listDeadLetters(cmd *cobra.Command, data, storeURL, state string, asJSON bool) error {
	switch state {
	case store.DeadOpen, store.DeadTaken, store.DeadRetried, store.DeadResolved, "all":
	default:
		return fmt.Errorf("--state %q: want open, retried, resolved, taken or all", state)
	}
	var st deadLetterLister
	if storeURL != "" {
		pg, err := openStoreFlag(cmd.Context(), storeURL)
		if err != nil {
			return err
		}
		if v, err := pg.SchemaVersion(cmd.Context()); err != nil || v == 0 {
			pg.Close()
			if err == nil {
				err = fmt.Errorf("no dead letters in PostgreSQL at %s: the database has no reach schema (no gateway used it as its store:)", pg.Where())
			}
			return err
		}
		st = pg
	} else {
		sq, err := openDeadLetters(cmd.Context(), data)
		if err != nil {
			return err
		}
		st = sq
	}
	defer st.Close()
	if state == "all" {
		state = ""
	}
	ds, err := st.ListDeadLetters(cmd.Context(), state)
	if err != nil {
		return err
	}
	// The store keeps an undo's arguments as it registered them, for its
	// retry; they are shown masked, as the gateway's API shows them (by
	// the rules alone: the secrets of a configuration are not known here).
	// A note is masked when a dismissal writes it (dismissStored, the API).
	red, err := redact.New(nil)
	if err != nil {
		return err
	}
	for i := range ds {
		ds[i].Args, ds[i].Error = red.Redact(ds[i].Args), red.RedactString(ds[i].Error)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		type deadJSON struct {
			ID       int64           `json:"id"`
			State    string          `json:"state"`
			Request  string          `json:"request"`
			Frame    string          `json:"frame,omitempty"`
			Tool     string          `json:"tool"`
			Args     json.RawMessage `json:"arguments,omitempty"`
			Attempts int             `json:"attempts"`
			Error    string          `json:"error,omitempty"`
			Note     string          `json:"note,omitempty"`
			Created  time.Time       `json:"created"`
			Updated  time.Time       `json:"updated"`
		}
		js := make([]deadJSON, 0, len(ds))
		for _, d := range ds {
			j := deadJSON{ID: d.ID, State: d.State, Request: d.Request, Frame: d.Frame, Tool: d.Tool, Attempts: d.Attempts,
				Error: d.Error, Note: d.Note, Created: d.Created, Updated: d.Updated}
			if json.Valid(d.Args) {
				j.Args = d.Args
			}
			js = append(js, j)
		}
		var b strings.Builder
		if err := writeJSON(&b, js); err != nil {
			return err
		}
		_, err := io.WriteString(out, string(printableJSON([]byte(b.String()))))
		return err
	}
	tw := table(out, len(ds), "no dead letters", "ID\tSTATE\tREQUEST\tUNDO TOOL\tARGUMENTS\tATTEMPTS\tERROR\tCREATED")
	if tw == nil {
		return nil
	}
	for _, d := range ds {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, printable(d.State), printable(d.Request), printable(d.Tool), printable(string(d.Args)), d.Attempts, printable(d.Error), d.Created.Format("2006-01-02 15:04:05"))
	}
	return tw.Flush()
}
