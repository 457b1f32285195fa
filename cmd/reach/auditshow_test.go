package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/agentreach/reach/internal/audit"
	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// showData writes n events into a new data folder: of request req_root
// and of its sub-requests req_sub1 and req_sub2 (and of an unrelated
// req_other), interleaved, with cells of every width, runes of more than
// one byte, tokens, latencies, refusals and instances.
func showData(t *testing.T, n int) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	for _, r := range []*store.Request{
		{ID: "req_root", State: "stopped", Started: at},
		{ID: "req_sub1", Parent: "req_root", Agent: "planner", State: "stopped", Started: at},
		{ID: "req_sub2", Parent: "req_sub1", Agent: "executor", State: "stopped", Started: at},
	} {
		if err := st.PutRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var recs []*store.AuditRecord
	for i := 1; i <= n; i++ {
		e := &audit.Event{Request: []string{"req_root", "req_sub1", "req_root", "req_other", "req_sub2"}[i%5],
			Frame: fmt.Sprintf("%016x", i), Kind: "tool", Name: []string{"search_kb", "recherche_é", "検索", strings.Repeat("n", i%23)}[i%4],
			Decision: []string{"completed", "refused", "executing"}[i%3], Args: []byte(fmt.Sprintf(`{"q":"%s"}`, strings.Repeat("ü", i%60))),
			Result: strings.Repeat("r", i%45), Tokens: int64(i % 7 * 100), Latency: time.Duration(i%5) * 1234567 * time.Nanosecond}
		if i%3 == 1 {
			e.Parent = fmt.Sprintf("%016x", i-1)
			e.Guard, e.Code, e.Message = "policy", "denied", strings.Repeat("why ", i%30)
		}
		if i%11 == 0 {
			e.Instance = "b"
		}
		data, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &store.AuditRecord{Seq: int64(i), Time: at.Add(time.Duration(i) * time.Millisecond), Request: e.Request,
			PrevHash: []byte{0}, Hash: []byte{byte(i)}, Data: data})
	}
	for len(recs) > 0 {
		k := min(len(recs), 500)
		if err := st.AppendAudit(ctx, recs[:k], nil); err != nil {
			t.Fatal(err)
		}
		recs = recs[k:]
	}
	return dir
}

// tabwriterEvents is the table reach audit show printed before it read a
// page at a time: every event held, laid out by text/tabwriter.
func tabwriterEvents(evs []*audit.Event, withRequest bool) string {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if withRequest {
		fmt.Fprint(tw, "REQUEST\t")
	}
	fmt.Fprintln(tw, "SEQ\tTIME\tFRAME\tPARENT\tKIND\tNAME\tDECISION\tARGS\tRESULT\tTOKENS\tLATENCY\tWHY")
	for _, e := range evs {
		if withRequest {
			fmt.Fprintf(tw, "%s\t", orDash(printable(e.Request)))
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
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			e.Seq, e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), orDash(e.Frame), orDash(e.Parent), orDash(printable(e.Kind)),
			orDash(printable(e.Name)), orDash(printable(e.Decision)), orDash(auditPreview(string(e.Args), 48)), orDash(auditPreview(e.Result, 40)),
			tokens, latency, auditPreview(why, 80))
	}
	tw.Flush()
	return b.String()
}

// TestAuditShowPagedSameOutput: reach audit show, which reads a page at a
// time and lays the table out itself, prints what it printed when it read
// the request's whole log and laid it out with text/tabwriter: the table,
// the tree's table and the JSON lines of 2,600 events (three pages of the
// root's, the tree's read together).
func TestAuditShowPagedSameOutput(t *testing.T) {
	dir := showData(t, 2600)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, dir, &sqlite.Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := audit.Show(ctx, st, "req_root")
	var tree []*audit.Event
	for _, r := range []string{"req_root", "req_sub1", "req_sub2"} {
		evs, _ := audit.Show(ctx, st, r)
		tree = append(tree, evs...)
	}
	st.Close()
	sortBySeq(tree)
	var rootJSON, treeJSON bytes.Buffer
	writeEventsJSON(&rootJSON, root)
	writeEventsJSON(&treeJSON, tree)
	if len(root) != 1040 || len(tree) != 2080 {
		t.Fatalf("%d events of the root, %d of the tree; want 1040 and 2080", len(root), len(tree))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"req_root"}, tabwriterEvents(root, false)},
		{[]string{"req_root", "--tree"}, tabwriterEvents(tree, true)},
		{[]string{"req_root", "--json"}, rootJSON.String()},
		{[]string{"req_root", "--tree", "--json"}, treeJSON.String()},
	} {
		got, err := runCLI(t, append([]string{"audit", "show", "--data", dir}, c.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			gl, wl := strings.Split(got, "\n"), strings.Split(c.want, "\n")
			for i := range min(len(gl), len(wl)) {
				if gl[i] != wl[i] {
					t.Errorf("audit show %v: line %d is\n%q\nwant\n%q", c.args, i, gl[i], wl[i])
					break
				}
			}
			t.Errorf("audit show %v: %d lines, want %d", c.args, len(gl), len(wl))
		}
	}
}

func sortBySeq(evs []*audit.Event) {
	for i := 1; i < len(evs); i++ {
		for j := i; j > 0 && evs[j].Seq < evs[j-1].Seq; j-- {
			evs[j], evs[j-1] = evs[j-1], evs[j]
		}
	}
}

// readCounter is an audit store that counts what each read returns.
type readCounter struct {
	store.AuditLog
	mu          sync.Mutex
	reads, most int
	whole       int // reads of a request's whole log
}

func (c *readCounter) count(recs []*store.AuditRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	c.most = max(c.most, len(recs))
}

func (c *readCounter) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	recs, err := c.AuditLog.RequestAudit(ctx, request)
	c.count(recs)
	c.mu.Lock()
	c.whole++
	c.mu.Unlock()
	return recs, err
}

func (c *readCounter) RequestsAudit(ctx context.Context, requests []string, after, upTo int64, limit int) ([]*store.AuditRecord, error) {
	recs, err := c.AuditLog.(store.RequestsAuditor).RequestsAudit(ctx, requests, after, upTo, limit)
	c.count(recs)
	return recs, err
}

// TestAuditShowReadsAPageAtATime: reach audit show reads a request of
// 2,080 events (its tree's), with its table and as JSON, in reads of at most
// showPage records, and never a request's whole log: it read all of them
// at once (240-256 MB of RSS for 100,000).
func TestAuditShowReadsAPageAtATime(t *testing.T) {
	dir := showData(t, 2600)
	var c *readCounter
	defer func(f func(*auditStore) *auditStore) { openedAuditStore = f }(openedAuditStore)
	openedAuditStore = func(s *auditStore) *auditStore {
		c = &readCounter{AuditLog: s.AuditLog}
		s.AuditLog = c
		return s
	}
	for _, args := range [][]string{{"req_root"}, {"req_root", "--tree"}, {"req_root", "--tree", "--json"}} {
		out, err := runCLI(t, append([]string{"audit", "show", "--data", dir}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if c.whole != 0 || c.most > showPage || c.reads < 2 {
			t.Errorf("audit show %v: %d reads, the largest of %d records, %d of a request's whole log; want reads of at most %d and none whole",
				args, c.reads, c.most, c.whole, showPage)
		}
		if n := strings.Count(out, "\n"); n < 1040 {
			t.Errorf("audit show %v printed %d lines", args, n)
		}
	}
}
