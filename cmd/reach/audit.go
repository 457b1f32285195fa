package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/loopbench"
	"github.com/agentreach/reach/internal/policy"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
	"github.com/spf13/cobra"
)

func newAudit() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Inspect and verify the audit log",
		Long: `The audit log is the tamper-evident record of every decision: it lives in
the SQLite database ` + sqlite.DefaultFile + ` in the data folder (--data, default ` + config.DefaultData + `), or in
the PostgreSQL database that several instances share (--store postgres://...).`,
	}
	var data string
	cmd.PersistentFlags().StringVar(&data, "data", config.DefaultData, "the data folder that holds "+sqlite.DefaultFile)
	cmd.PersistentFlags().String("store", "", "the PostgreSQL database that holds the log (postgres://USER@HOST:PORT/DB?sslmode=...), instead of --data")
	configFlag(cmd, &data)

	var verifyJSON bool
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check the audit log's hash chain",
		Long: `Walks the whole hash chain and checks every event and checkpoint. Exits 0
and prints "chain ok: N events" when nothing was edited, deleted, reordered or
inserted (and, when the log noted recorded events it lost before writing
them, how many: they were never chained); otherwise exits non-zero, naming the first bad event's seq and what
is wrong with it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openAuditStore(cmd, data)
			if err != nil {
				return err
			}
			defer st.Close()
			rep, err := audit.Verify(cmd.Context(), st)
			out := cmd.OutOrStdout()
			if verifyJSON {
				// A broken chain has no report (Verify stops at the first
				// bad event): it is said by the bad event's seq and problem.
				v := map[string]any{"ok": err == nil}
				if rep != nil {
					v["events"], v["checkpoints"] = rep.Events, rep.Checkpoints
					if rep.LossNotes > 0 {
						v["lost"], v["loss_notes"] = rep.Lost, rep.LossNotes
					}
					if rep.Head != nil {
						v["head"] = audit.FormatHash(rep.Head)
					}
				}
				if err != nil {
					v["error"] = printable(err.Error())
					if ce := (*audit.ChainError)(nil); errors.As(err, &ce) {
						v["seq"], v["problem"] = ce.Seq, ce.Problem
					}
				}
				if werr := writeJSON(out, v); werr != nil {
					return werr
				}
			}
			if err != nil {
				return err
			}
			if verifyJSON {
				return nil
			}
			fmt.Fprintf(out, "chain ok: %d events", rep.Events)
			if rep.Events > 0 {
				fmt.Fprintf(out, " (head %s, %d checkpoints matched)", audit.FormatHash(rep.Head), rep.Checkpoints)
			}
			fmt.Fprintln(out)
			if rep.LossNotes > 0 {
				// The chain is whole, but not everything was written.
				fmt.Fprintf(out, "%d recorded events were lost before they were written (queue full or failed commits), as %d loss notes in the log say (kind %s, code %s)\n",
					rep.Lost, rep.LossNotes, audit.LossKind, audit.LossCode)
			}
			return nil
		},
	}

	var asJSON, tree bool
	show := &cobra.Command{
		Use:   "show REQUEST",
		Short: "Print a request's audit events, step by step",
		Long: `Prints the events of one request in order: seq, time, frame, parent, kind,
name, decision, a preview of the arguments and of the result, tokens, latency,
and why a step was refused or failed. With --json, one JSON object per event.
With --tree, the events of its sub-requests too (the work of the agents it
handed tasks to, and of theirs), in order, each with its request. It reads
and prints 1,000 events at a time, up to the log's head when it began, so a
long request's memory is a page's.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openAuditStore(cmd, data)
			if err != nil {
				return err
			}
			defer st.Close()
			// The log's head before the requests are listed: what the
			// two passes of a table read is the same, however the log
			// grows meanwhile.
			head, _, err := st.AuditHead(cmd.Context())
			if err != nil {
				return err
			}
			ids, err := subRequests(cmd, st, args[0])
			if err != nil {
				return err
			}
			if !tree && len(ids) > 1 {
				fmt.Fprintf(cmd.ErrOrStderr(), "request %s has %d sub-requests (the work of the agents it handed tasks to); add --tree to show their events too\n", args[0], len(ids)-1)
			}
			if !tree {
				ids = ids[:1]
			}
			n, err := showEvents(cmd.Context(), st.AuditLog, ids, head, cmd.OutOrStdout(), asJSON, tree)
			if err == nil && n == 0 {
				err = fmt.Errorf("no audit events for request %s in %s", args[0], st.where)
			}
			return err
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per event")
	show.Flags().BoolVar(&tree, "tree", false, "add the events of its sub-requests (delegated agents' work), each with its request")

	var format, outFile string
	export := &cobra.Command{
		Use:   "export REQUEST",
		Short: "Write a recorded request as a loop-benchmark trace",
		Long: `Writes the request's recorded frames in the loop benchmark's trace format
(--format loopbench), so that a real request can be replayed with
"reach bench loops" or "reach audit replay". Tool contracts are not in the
audit log: the trace lists every tool as read/reentrant; edit them, and the
label, before scoring.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "loopbench" {
				return fmt.Errorf("unknown format %q (want loopbench)", format)
			}
			t, _, err := exportTrace(cmd, data, args[0])
			if err != nil {
				return err
			}
			b, err := json.MarshalIndent(t, "", " ")
			if err != nil {
				return err
			}
			b = append(b, '\n')
			if outFile == "" || outFile == "-" {
				_, err = cmd.OutOrStdout().Write(printableJSON(b))
				return err
			}
			// The trace holds the request's recorded arguments and
			// results, which the data folder keeps to its owner: an
			// existing file is made its owner's alone too (writePrivate).
			return writePrivate(outFile, b)
		},
	}
	export.Flags().StringVar(&format, "format", "loopbench", "output format (loopbench)")
	export.Flags().StringVarP(&outFile, "output", "o", "", "write to this file instead of stdout")

	var policyPath string
	var noLoops bool
	replay := &cobra.Command{
		Use:   "replay REQUEST",
		Short: "Re-decide a recorded request's calls under a policy or guard change (a what-if)",
		Long: `Replays the recorded calls of a request, with their recorded results, through
reach's guards, deciding by access level (no configuration is read), or
with --policy FILE (a Cedar policy file or folder) under those policies
(--no-loops turns the loop guard off), and prints every event
whose decision would differ from the recorded one: a what-if for a policy or
guard change. Exits 0 whether or not anything differs.

The request is replayed as the principal and tenant it was recorded for;
their roles and attributes are not in the log, so a policy on them decides
as for a principal with none. The audit log holds no tool contracts: every
tool is replayed as a read (as "audit export" lists it), so a policy on
resource.access decides each call as it would a read's. A tool is a member
of the upstream recorded with its calls (the upstream's configured name,
whatever prefix its tools' names carry), as the gateway's policies place it;
in a log written before reach recorded it, of the upstream its name's part
before "__" names (Reach::Upstream::"fs" for fs__write_file), and the
replay says which tools it placed so. A call recorded as held for approval
counts as allowed without --policy (access levels ask for no approval again);
with --policy, one the policies now allow outright or refuse is printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, recorded, err := exportTrace(cmd, data, args[0])
			if err != nil {
				return err
			}
			newRuntime, err := replayRuntime(policyPath, noLoops)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			diffs := 0
			unjudged := map[string]int{}
			for _, d := range loopbench.Decisions(t, newRuntime) {
				if d.ID == "" {
					return errors.New(d.Reason)
				}
				was, now := recorded[d.ID], loopbench.VerdictOf(d)
				if was == loopbench.Held && policyPath == "" {
					was = loopbench.Allowed // no policy to judge it by: the approval is not asked again
				}
				if code := t.Events[t.Index(d.ID)].ErrorType; was == loopbench.Refused && !replayJudges(code) {
					unjudged[code]++ // not decided again: the replay would let it through
					continue
				}
				if was == now {
					continue
				}
				diffs++
				e := t.Events[t.Index(d.ID)]
				name := e.Tool
				if name == "" {
					name = e.Type
				}
				fmt.Fprintf(out, "%s %s %s: recorded %s, now %s", printable(d.ID), printable(name), printable(strings.TrimSpace(string(e.Args))), was, now)
				if d.Reason != "" {
					fmt.Fprintf(out, " (%s)", printable(firstLine(d.Reason)))
				}
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "%d of %d events would be decided differently\n", diffs, len(t.Events))
			if len(unjudged) > 0 {
				codes := slices.Sorted(maps.Keys(unjudged))
				n := 0
				for i, c := range codes {
					n += unjudged[c]
					codes[i] = fmt.Sprintf("%s (%d)", printable(cmp.Or(c, "cancelled")), unjudged[c])
				}
				fmt.Fprintf(out, "note: %d recorded refusals are not decided again, by what the log does not hold (the tool's schema, the tools then, a stop, a rate limit, the budget): %s\n", n, strings.Join(codes, ", "))
			}
			if policyPath != "" {
				fmt.Fprintln(out, "note: the audit log holds no tool contracts: every tool was judged as a read (resource.access \"read\"), of the upstream recorded with its calls")
				if guessed := byPrefix(t); len(guessed) > 0 {
					fmt.Fprintf(out, "note: the log records no upstream for %s (written before reach recorded it, or of no upstream): each was judged of the upstream its name's part before __ names, which is its upstream only if that upstream's prefix is its name\n",
						printable(strings.Join(guessed, ", ")))
				}
			}
			return nil
		},
	}
	replay.Flags().StringVar(&policyPath, "policy", "", "a Cedar policy file or folder to decide with (default: access levels)")
	replay.Flags().BoolVar(&noLoops, "no-loops", false, "turn the loop guard off")

	verify.Flags().BoolVar(&verifyJSON, "json", false, "print {ok, events, head, checkpoints} as JSON, or {ok: false, error, seq, problem} for a broken chain")
	cmd.AddCommand(verify, show, export, replay)
	return cmd
}

// exportTrace reads a request's events and turns them into a trace.
func exportTrace(cmd *cobra.Command, data, request string) (*loopbench.Trace, map[string]loopbench.Verdict, error) {
	st, err := openAuditStore(cmd, data)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	evs, err := audit.Show(cmd.Context(), st, request)
	if err != nil {
		return nil, nil, err
	}
	// The delegated agents' frames, in sub-requests of their own, nest
	// under the delegate frames: their events are part of the trace.
	_, more, err := subRequestEvents(cmd, st, request, true)
	if err != nil {
		return nil, nil, err
	}
	evs = append(evs, more...)
	// The store's retention removes the requests, sub-requests too, and
	// keeps their events, which name the root request: those of
	// sub-requests the store no longer lists are found in the log, from
	// the start of the root's first frame to its last event.
	if len(evs) > 0 {
		seen := map[string]bool{request: true}
		start := evs[0].Time
		for _, e := range evs {
			seen[e.Request] = true
			if b := e.Time.Add(-e.Latency); b.Before(start) {
				start = b
			}
		}
		subs, err := delegatedInLog(cmd.Context(), st, request, start, evs[0].Seq, evs[len(evs)-1].Seq)
		if err != nil {
			return nil, nil, err
		}
		for _, sub := range subs {
			if seen[sub] {
				continue
			}
			seen[sub] = true
			more, err := audit.Show(cmd.Context(), st, sub)
			if err != nil {
				return nil, nil, err
			}
			evs = append(evs, more...)
		}
	}
	t, recorded := loopbench.FromAudit(request, evs, nil)
	if len(t.Events) == 0 {
		return nil, nil, fmt.Errorf("no recorded frames for request %s in %s", request, st.where)
	}
	return t, recorded, nil
}

// subRequests returns request and its sub-requests at any depth, each
// once (an edited requests table, which the audit log's chain does not
// guard, may make them a cycle), breadth first.
func subRequests(cmd *cobra.Command, st *auditStore, request string) ([]string, error) {
	ids := []string{request}
	seen := map[string]bool{request: true}
	for i := 0; i < len(ids); i++ {
		subs, err := st.ListRequests(cmd.Context(), store.RequestFilter{Parent: ids[i], Limit: 100000})
		if err != nil {
			return nil, err
		}
		for _, sub := range subs {
			if !seen[sub.ID] {
				seen[sub.ID] = true
				ids = append(ids, sub.ID)
			}
		}
	}
	return ids, nil
}

// showPage is how many events reach audit show reads, decodes and prints
// at a time: what it holds, however many events the request has (before,
// all of them: 240-256 MB of RSS for 100,000).
const showPage = 1000

// showEvents prints the events of the requests ids with Seq <= upTo, in
// seq order, read showPage at a time (audit.ShowRequests), and returns how
// many it printed (none printed: nothing written). As JSON lines, each
// page is printed as it is read; as the table (with each event's request
// first if withRequest), whose columns are as wide as their widest cell,
// the events are read twice: once to measure the columns, once to print.
func showEvents(ctx context.Context, st store.AuditLog, ids []string, upTo int64, w io.Writer, asJSON, withRequest bool) (int, error) {
	page := showPage
	if _, ok := st.(store.RequestsAuditor); !ok {
		page = math.MaxInt // a store that reads no page alone: its whole log, once
	}
	each := func(f func([]*audit.Event) error) (int, error) {
		n := 0
		for after := int64(0); ; {
			evs, err := audit.ShowRequests(ctx, st, ids, after, upTo, page)
			if err != nil {
				return n, err
			}
			if len(evs) > 0 {
				if evs[0].Seq <= after {
					return n, fmt.Errorf("the store read events after %d from %d", after, evs[0].Seq)
				}
				if err := f(evs); err != nil {
					return n, err
				}
				n += len(evs)
				after = evs[len(evs)-1].Seq
			}
			if len(evs) < page {
				return n, nil
			}
		}
	}
	if asJSON {
		return each(func(evs []*audit.Event) error { return writeEventsJSON(w, evs) })
	}
	t := newEventTable(withRequest)
	n, err := each(func(evs []*audit.Event) error {
		for _, e := range evs {
			t.measure(t.cells(e))
		}
		return nil
	})
	if err != nil || n == 0 {
		return 0, err
	}
	bw := bufio.NewWriter(w)
	t.write(bw, t.header)
	printed, err := each(func(evs []*audit.Event) error {
		for _, e := range evs {
			t.write(bw, t.cells(e))
		}
		return nil
	})
	if err != nil {
		return printed, err
	}
	if printed != n {
		return printed, fmt.Errorf("the log's events up to %d were %d, then %d", upTo, n, printed)
	}
	return printed, bw.Flush()
}

// subRequestEvents counts the sub-requests below request, at any depth,
// and, if read, returns their events. Each request is read once: an
// edited requests table (which the audit log's chain does not guard) may
// make them a cycle.
func subRequestEvents(cmd *cobra.Command, st *auditStore, request string, read bool) (int, []*audit.Event, error) {
	var evs []*audit.Event
	seen := map[string]bool{request: true}
	for queue := []string{request}; len(queue) > 0; queue = queue[1:] {
		subs, err := st.ListRequests(cmd.Context(), store.RequestFilter{Parent: queue[0], Limit: 100000})
		if err != nil {
			return 0, nil, err
		}
		for _, sub := range subs {
			if seen[sub.ID] {
				continue
			}
			seen[sub.ID] = true
			queue = append(queue, sub.ID)
			if !read {
				continue
			}
			more, err := audit.Show(cmd.Context(), st, sub.ID)
			if err != nil {
				return 0, nil, err
			}
			evs = append(evs, more...)
		}
	}
	return len(seen) - 1, evs, nil
}

// delegatedInLog returns the sub-requests whose events, recorded from
// start (on, before the root's first event, at sequence number first) to
// the root's last event (sequence number last), name root as their root
// request, in the order of their first events.
func delegatedInLog(ctx context.Context, st store.AuditLog, root string, start time.Time, first, last int64) ([]string, error) {
	const page = 1000
	from := first - 1 // the scan starts after it: back a page at a time to start
	for from > 0 {
		back := max(from-page, 0)
		recs, err := st.ScanAudit(ctx, back, 1)
		if err != nil {
			return nil, err
		}
		from = back
		if len(recs) == 0 || recs[0].Time.Before(start) {
			break
		}
	}
	mark := []byte(root) // the events that may name it, before decoding them
	var out []string
	found := map[string]bool{}
	for after := from; after < last; {
		recs, err := st.ScanAudit(ctx, after, page)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			if r.Seq > last {
				break
			}
			if r.Request == root || found[r.Request] || r.Time.Before(start) || !bytes.Contains(r.Data, mark) {
				continue
			}
			var e struct {
				Root string `json:"root"`
			}
			if json.Unmarshal(r.Data, &e) == nil && e.Root == root {
				found[r.Request] = true
				out = append(out, r.Request)
			}
		}
		after = recs[len(recs)-1].Seq
	}
	return out, nil
}

// byPrefix lists the trace's tools whose upstream the log did not record
// and whose name has a prefix: a replay places them by it.
func byPrefix(t *loopbench.Trace) []string {
	var out []string
	for name, c := range t.Tools {
		if c.Upstream == "" && policy.Upstream(name) != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// replayRuntime builds the runtime a replay decides with.
func replayRuntime(policyPath string, noLoops bool) (func() *reach.Runtime, error) {
	opts := reach.Options{DefaultBudget: &reach.Budget{}, DisableLoopGuard: noLoops}
	if policyPath != "" {
		set, err := policy.Load(policyPath)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", policyPath, err)
		}
		return func() *reach.Runtime {
			var rt *reach.Runtime
			eng := policy.New(&policy.Options{Policies: set, Tools: func() []reach.Tool { return rt.Tools() }})
			o := opts
			o.Authorizer = eng
			rt = reach.New(&o)
			return rt
		}, nil
	} else {
		opts.Authorizer = permitRecorded{}
	}
	return func() *reach.Runtime { o := opts; return reach.New(&o) }, nil
}

// replayJudges says whether a recorded refusal of this code is one a replay
// decides again: the call graph's (a cycle, a reentrancy contract), the
// loop guard's and the policies' (or access levels'). The others come from
// what the log does not hold (the tool's schema, the tools served then, a
// stop, a rate limit, the request's budget, the store): replayed, each such
// call would be let through, and was printed "recorded refused, now
// allowed" as if a policy change allowed it.
func replayJudges(code string) bool {
	switch code {
	case "cycle", "reentrancy", "keyed_reentrancy", "agent_reentrancy", "agent_keyed_reentrancy", "delegation_cycle",
		"denied", "approval_denied", "approval_required":
		return true
	}
	return strings.HasPrefix(code, "loop_")
}

// permitRecorded lets every call through the authorize stage: without a
// policy to compare, a replay asks only what the other guards would decide.
type permitRecorded struct{}

func (permitRecorded) Authorize(context.Context, *reach.Call) (reach.Decision, *reach.Error) {
	return reach.Permit, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// auditStore is the store an audit command reads, and where it is.
type auditStore struct {
	store.AuditLog
	store.Requests
	close func() error
	where string
}

func (s *auditStore) Close() error { return s.close() }

// openAuditStore opens the store the command names: the PostgreSQL
// database of --store, or the SQLite database in dir, which must exist.
func openAuditStore(cmd *cobra.Command, dir string) (*auditStore, error) {
	if url, _ := cmd.Flags().GetString("store"); url != "" {
		pg, err := openStoreFlag(cmd.Context(), url)
		if err != nil {
			return nil, err
		}
		if v, err := pg.SchemaVersion(cmd.Context()); err != nil || v == 0 {
			pg.Close()
			if err == nil {
				err = fmt.Errorf("no audit log in PostgreSQL at %s: the database has no reach schema (no gateway used it as its store:)", pg.Where())
			}
			return nil, err
		}
		return &auditStore{AuditLog: pg, Requests: pg, close: pg.Close, where: "PostgreSQL at " + pg.Where()}, nil
	}
	st, err := sqlite.Open(cmd.Context(), dir, &sqlite.Options{NoCreate: true})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no audit log in %s: %s does not exist (use --data to name the data folder, or --store for PostgreSQL)",
			dir, filepath.Join(dir, sqlite.DefaultFile))
	}
	if err != nil {
		return nil, err
	}
	return openedAuditStore(&auditStore{AuditLog: st, Requests: st, close: st.Close, where: st.Path()}), nil
}

// openedAuditStore is what openAuditStore returns for a store it opened:
// the store itself, or a test's wrapper of it.
var openedAuditStore = func(s *auditStore) *auditStore { return s }

// table starts a table of rows on out under header (its columns separated
// by tabs), to be flushed when its rows are written; with no rows it says
// none and returns nil.
func table(out io.Writer, rows int, none, header string) *tabwriter.Writer {
	if rows == 0 {
		fmt.Fprintln(out, none)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

// writeEvents prints events as a table, one row per step.
func writeEvents(w io.Writer, evs []*audit.Event) error { return writeEventsOf(w, evs, false) }

// writeTreeEvents is writeEvents with each event's request first.
func writeTreeEvents(w io.Writer, evs []*audit.Event) error { return writeEventsOf(w, evs, true) }

func writeEventsOf(w io.Writer, evs []*audit.Event, withRequest bool) error {
	t := newEventTable(withRequest)
	for _, e := range evs {
		t.measure(t.cells(e))
	}
	bw := bufio.NewWriter(w)
	t.write(bw, t.header)
	for _, e := range evs {
		t.write(bw, t.cells(e))
	}
	return bw.Flush()
}

// eventTable lays out the table of audit events as a text/tabwriter
// (padding 2, spaces) would, without holding its rows: every cell but a
// row's last is padded to its column's widest cell (in runes) and 2
// spaces, the widths measured over every row first.
type eventTable struct {
	withRequest bool
	header      []string
	widths      []int
}

func newEventTable(withRequest bool) *eventTable {
	t := &eventTable{withRequest: withRequest}
	if withRequest {
		t.header = append(t.header, "REQUEST")
	}
	t.header = append(t.header, "SEQ", "TIME", "FRAME", "PARENT", "KIND", "NAME", "DECISION", "ARGS", "RESULT", "TOKENS", "LATENCY", "WHY")
	t.measure(t.header)
	return t
}

// cells returns e's row.
func (t *eventTable) cells(e *audit.Event) []string {
	var row []string
	if t.withRequest {
		row = append(row, orDash(printable(e.Request)))
	}
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
	if e.Instance != "" {
		why += " (instance " + e.Instance + ")"
	}
	return append(row, fmt.Sprint(e.Seq), e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), orDash(printable(e.Frame)), orDash(printable(e.Parent)),
		orDash(printable(e.Kind)), orDash(printable(e.Name)), orDash(printable(e.Decision)), orDash(auditPreview(string(e.Args), 48)),
		orDash(auditPreview(e.Result, 40)), tokens, latency, auditPreview(why, 80))
}

// measure widens the columns to row's cells (its last is not aligned).
func (t *eventTable) measure(row []string) {
	if len(t.widths) < len(row)-1 {
		t.widths = append(t.widths, make([]int, len(row)-1-len(t.widths))...)
	}
	for i, c := range row[:len(row)-1] {
		t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c))
	}
}

// write prints row, each cell but the last padded to its column.
func (t *eventTable) write(w *bufio.Writer, row []string) {
	for i, c := range row[:len(row)-1] {
		w.WriteString(c)
		for n := utf8.RuneCountInString(c); n < t.widths[i]+2; n++ {
			w.WriteByte(' ')
		}
	}
	w.WriteString(row[len(row)-1])
	w.WriteByte('\n')
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// auditPreview puts s on one line, escapes what is left of its control
// characters ([printable]) and cuts it to n runes.
func auditPreview(s string, n int) string {
	s = printable(strings.Join(strings.Fields(s), " "))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// writeEventsJSON prints one JSON object per event: its fields, and where
// it sits in the chain (seq, time, request, prev_hash, hash); control
// characters as JSON escapes ([printableJSON]).
func writeEventsJSON(w io.Writer, evs []*audit.Event) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
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
		buf.Reset()
		if err := enc.Encode(obj); err != nil {
			return err
		}
		if _, err := w.Write(printableJSON(buf.Bytes())); err != nil {
			return err
		}
	}
	return nil
}
