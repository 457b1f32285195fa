package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentreach/reach/internal/policy/pin"
	"github.com/agentreach/reach/internal/store/postgres"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// newToolsCmd is `reach tools list|diff|approve`: the pinned definitions of
// upstream tools (P7), in the data folder's store.
func newToolsCmd() *cobra.Command {
	var data, storeURL string
	cmd := dataGroup(&data, &cobra.Command{
		Use:   "tools",
		Short: "Review upstream tool definitions held after a change",
		Long: `The gateway pins each upstream tool's definition (title, description, schemas,
annotations) the first time it sees it. When an upstream changes a definition,
the tool is held (not listed, not callable) until someone reviews the change
with ` + "`reach tools diff`" + ` and approves it with ` + "`reach tools approve`" + `. A
running gateway sees the approval within seconds, without a restart.

Prompts, resources and resource templates are pinned the same way. A pin whose
upstream no longer lists it is kept, shown "unlisted since", so that a
definition that comes back changed is held; the pins of an upstream removed
from the configuration are dropped when the gateway next starts.

Gateways that share a PostgreSQL store keep their pins there: name it with
--store postgres://... instead of --data.`,
	})
	cmd.PersistentFlags().StringVar(&storeURL, "store", "", "the PostgreSQL database of gateways that share it (postgres://USER@HOST:PORT/DB?sslmode=...), instead of --data")
	configFlag(cmd, &data)

	var held, asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the pinned tools",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			_, noStore := os.Stat(filepath.Join(data, sqlite.DefaultFile))
			if _, noFile := os.Stat(pin.Path(data)); storeURL == "" && errors.Is(noStore, fs.ErrNotExist) && errors.Is(noFile, fs.ErrNotExist) {
				// Nothing pinned yet is no failure: a gateway without
				// upstreams pins nothing. Say where it looked.
				if asJSON {
					return writeJSON(out, []pin.Pin{})
				}
				fmt.Fprintln(out, noPins(data, storeURL, false))
				return nil
			}
			return withPins(cmd.Context(), data, storeURL, func(s *pin.Store) error {
				pins, err := s.List(held)
				if err != nil {
					return err
				}
				if asJSON {
					if pins == nil {
						pins = []pin.Pin{}
					}
					return writeJSON(out, pins)
				}
				// Not "no tools": the gateway may serve many (its own are
				// not pinned), and a new user read that it had none.
				tw := table(out, len(pins), noPins(data, storeURL, held), "TOOL\tUPSTREAM\tSHA256\tPINNED\tAPPROVED BY\tSTATUS")
				if tw == nil {
					return nil
				}
				for _, p := range pins {
					status := "pinned"
					if p.Pending != nil {
						status = "held: changed " + p.Pending.Seen.Format("2006-01-02 15:04")
					}
					if p.Unlisted != nil {
						// Kept while its upstream is configured: a
						// definition that comes back changed is held.
						status += "; unlisted since " + p.Unlisted.Format("2006-01-02 15:04")
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", printable(p.Tool), dash(printable(p.Upstream)), printable(p.Hash[:12]),
						p.Pinned.Format("2006-01-02 15:04"), dash(printable(p.ApprovedBy)), status)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().BoolVar(&held, "held", false, "only tools with a change waiting")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	diff := &cobra.Command{
		Use:   "diff [TOOL]",
		Short: "Show a held tool's change (every held tool's without TOOL)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withPins(cmd.Context(), data, storeURL, func(s *pin.Store) error {
				names := args
				if len(names) == 0 {
					pins, err := s.List(true)
					if err != nil {
						return err
					}
					if len(pins) == 0 {
						fmt.Fprintln(cmd.OutOrStdout(), "no tool definition is held")
						return nil
					}
					for _, p := range pins {
						names = append(names, p.Tool)
					}
				}
				for i, n := range names {
					d, err := s.Diff(n)
					if errors.Is(err, pin.ErrNoPin) {
						return fmt.Errorf("%s has no held change (see `reach tools list`)", n)
					}
					if err != nil {
						return err
					}
					if i > 0 {
						fmt.Fprintln(cmd.OutOrStdout())
					}
					fmt.Fprint(cmd.OutOrStdout(), printableLines(d)) // the upstream's text, as the reviewer must see it
				}
				return nil
			})
		},
	}

	var by string
	approve := &cobra.Command{
		Use:   "approve TOOL",
		Short: "Approve a held tool's new definition",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withPins(cmd.Context(), data, storeURL, func(s *pin.Store) error {
				who := cmp.Or(by, os.Getenv("USER"), "cli")
				if err := s.Approve(args[0], who); err != nil {
					if errors.Is(err, pin.ErrNoPin) {
						return fmt.Errorf("%s has no held change (see `reach tools list --held`)", args[0])
					}
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "approved the new definition of %s (by %s)\n", args[0], who)
				return nil
			})
		},
	}
	approve.Flags().StringVar(&by, "by", "", "who approves (default $USER)")

	var unlisted bool
	forget := &cobra.Command{
		Use:   "forget [KEY...]",
		Short: "Drop pins (those named, or with --unlisted every pin its upstream no longer lists)",
		Long: `Drops pins from the store. What an upstream lists again after its pin is
dropped is pinned as first seen: its definition is trusted as it then is,
not held as a change. Drop only what is gone for good.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !unlisted || len(args) > 0 && unlisted {
				return errors.New("name the pins to drop (as reach tools list shows them), or pass --unlisted alone")
			}
			return withPins(cmd.Context(), data, storeURL, func(s *pin.Store) error {
				named := map[string]bool{}
				for _, k := range args {
					if _, ok, err := s.Get(k); err != nil {
						return err
					} else if !ok {
						return fmt.Errorf("%s is not pinned (see reach tools list)", printable(k))
					}
					named[k] = true
				}
				gone, err := s.Forget(func(p pin.Pin) bool { return named[p.Tool] || unlisted && p.Unlisted != nil })
				if err != nil {
					return err
				}
				for _, k := range gone {
					fmt.Fprintf(cmd.OutOrStdout(), "dropped the pin of %s\n", printable(k))
				}
				if len(gone) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "no pin is unlisted")
				}
				return nil
			})
		},
	}
	forget.Flags().BoolVar(&unlisted, "unlisted", false, "drop every pin its upstream no longer lists")
	cmd.AddCommand(list, diff, approve, forget)
	return cmd
}

// withPins runs fn on the pins of data, the gateway's data folder: in its
// store (the gateway keeps them there; an older gateway's pins.json is
// imported), or, with no store, in its pins.json. The store is closed when
// fn returns. With storeURL, the pins are those of the PostgreSQL store
// that gateways share.
func withPins(ctx context.Context, data, storeURL string, fn func(*pin.Store) error) error {
	open := func() (*pin.Store, error) { return pin.Open(pin.Path(data)) }
	if storeURL != "" {
		pg, err := openStoreFlag(ctx, storeURL)
		if err != nil {
			return err
		}
		defer pg.Close()
		if v, err := pg.SchemaVersion(ctx); err != nil || v == 0 {
			if err == nil {
				err = fmt.Errorf("no pinned tools in PostgreSQL at %s: the database has no reach schema (no gateway used it as its store:)", pg.Where())
			}
			return err
		}
		open = func() (*pin.Store, error) { return pin.OpenStore(ctx, pg, "") }
	} else if _, err := os.Stat(filepath.Join(data, sqlite.DefaultFile)); err == nil {
		st, err := sqlite.Open(ctx, data, &sqlite.Options{NoCreate: true})
		if err != nil {
			return err
		}
		defer st.Close()
		open = func() (*pin.Store, error) { return pin.OpenStore(ctx, st, pin.Path(data)) }
	} else if _, err := os.Stat(pin.Path(data)); errors.Is(err, fs.ErrNotExist) {
		// Neither is most often a wrong folder: the gateway keeps its data
		// next to its configuration. Say so, as the audit commands do,
		// rather than answer that nothing is pinned or held.
		return fmt.Errorf("no pinned tools in %s: neither %s nor %s exists (use --data to name the gateway's data folder)",
			data, sqlite.DefaultFile, pin.File)
	}
	s, err := open()
	if err != nil {
		return err
	}
	return fn(s)
}

// openStoreFlag opens, without migrating it, the PostgreSQL store a
// command's --store flag names; its errors say --store, what the user
// typed (the configuration's say store:, with its line).
func openStoreFlag(ctx context.Context, url string) (*postgres.Store, error) {
	if !postgres.IsURL(url) {
		return nil, errors.New("--store: want postgres://USER@HOST:PORT/DB?sslmode=..., or --data DIR for SQLite")
	}
	pg, err := postgres.Open(ctx, url, &postgres.Options{NoMigrate: true})
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	return pg, nil
}

// noPins says that nothing is pinned (held, with --held) where tools list
// looked, and why a gateway's tools may be served all the same.
func noPins(data, storeURL string, held bool) string {
	where := data
	if storeURL != "" {
		where = "the PostgreSQL store"
	}
	if held {
		return fmt.Sprintf("no tool definition is held in %s: no upstream changed a tool since it was pinned", where)
	}
	return fmt.Sprintf("no pinned tools in %s (the gateway pins the tools of its upstreams when it first lists them, not its own; a gateway of another data folder: --data)", where)
}
