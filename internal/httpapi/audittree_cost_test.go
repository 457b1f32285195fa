package httpapi

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/ui"
)

// counting is a store that counts the audit records its reads return and
// the registry's lists and trees.
type counting struct {
	*store.Memory
	records, lists atomic.Int64
}

func (c *counting) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	recs, err := c.Memory.RequestAudit(ctx, request)
	c.records.Add(int64(len(recs)))
	return recs, err
}

func (c *counting) RequestsAudit(ctx context.Context, requests []string, after, upTo int64, limit int) ([]*store.AuditRecord, error) {
	recs, err := c.Memory.RequestsAudit(ctx, requests, after, upTo, limit)
	c.records.Add(int64(len(recs)))
	return recs, err
}

func (c *counting) RequestTree(ctx context.Context, root string, limit int) ([]string, error) {
	c.lists.Add(1)
	return c.Memory.RequestTree(ctx, root, limit)
}

func (c *counting) ListRequests(ctx context.Context, f store.RequestFilter) ([]*store.Request, error) {
	c.lists.Add(1)
	return c.Memory.ListRequests(ctx, f)
}

// TestAuditTreePageReadsThePage: a page of a tree reads the page's events
// from the store, not every event of every request in the tree; the pages
// together are the tree's events, each once, in seq order.
func TestAuditTreePageReadsThePage(t *testing.T) {
	ctx := context.Background()
	st := &counting{Memory: store.NewMemory()}
	ids := []string{"root"}
	if err := st.PutRequest(ctx, &store.Request{ID: "root", State: "running", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		id := fmt.Sprintf("sub-%d", i)
		if err := st.PutRequest(ctx, &store.Request{ID: id, Parent: "root", State: "running", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	appendEvents(st.Memory, "other")
	for range 50 {
		appendEvents(st.Memory, ids...)
	}
	appendEvents(st.Memory, "other")
	v := auditView{st: st}
	const limit = 10
	var after, last int64
	shown := 0
	for page := 0; ; page++ {
		st.records.Store(0)
		evs, err := v.events(ctx, ui.AuditQuery{Request: "root", Tree: true, After: after}, limit)
		if err != nil {
			t.Fatal(err)
		}
		if n := st.records.Load(); n > limit {
			t.Fatalf("page %d of a tree of %d events: %d events read from the store, want at most the page's %d", page, len(ids)*50, n, limit)
		}
		for _, e := range evs {
			if e.Seq <= last || e.Request == "other" {
				t.Fatalf("page %d: event %d of %s after %d", page, e.Seq, e.Request, last)
			}
			last = e.Seq
		}
		shown += len(evs)
		if len(evs) < limit {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	if shown != len(ids)*50 {
		t.Fatalf("the pages showed %d events, want the tree's %d", shown, len(ids)*50)
	}
}

// TestAuditTreeOfAnother: one who is not an operator, asking for the tree
// of another principal's request, gets the single request's answer (none
// of its events) whatever the tree's size, and the tree is not walked; a
// request the registry does not hold yet shows its events to their owner
// only.
func TestAuditTreeOfAnother(t *testing.T) {
	ctx := context.Background()
	st := &counting{Memory: store.NewMemory()}
	put := func(id, parent, principal string) {
		if err := st.PutRequest(ctx, &store.Request{ID: id, Parent: parent, Principal: principal, Tenant: "t", State: "running", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	put("bobs", "", "bob")
	for i := range maxTreeRequests {
		put(fmt.Sprintf("sub-%d", i), "bobs", "bob")
	}
	rec := func(seq int64, request, principal string) *store.AuditRecord {
		return &store.AuditRecord{Seq: seq, Time: time.Now(), Request: request,
			Data: []byte(`{"kind":"call","request":"` + request + `","principal":"` + principal + `","tenant":"t"}`)}
	}
	if err := st.AppendAudit(ctx, []*store.AuditRecord{rec(1, "bobs", "bob"), rec(2, "new", "alice"), rec(3, "bobs-new", "bob")}, nil); err != nil {
		t.Fatal(err)
	}
	v := auditView{st: st}
	alice := &ui.Actor{Principal: "alice", Tenant: "t"}
	evs, err := v.events(ctx, ui.AuditQuery{Request: "bobs", Tree: true, Principal: "alice", Owner: alice}, 10)
	if err != nil || len(evs) != 0 {
		t.Fatalf("alice's tree=1 on bob's request of %d requests: %d events, %v; want none and no error", maxTreeRequests+1, len(evs), err)
	}
	if n := st.lists.Load(); n != 0 {
		t.Fatalf("alice's tree=1 on bob's request walked the tree (%d lists)", n)
	}
	if _, err := v.events(ctx, ui.AuditQuery{Request: "bobs", Tree: true}, 10); err == nil {
		t.Fatal("an operator's tree=1 on a tree too large: no error")
	}
	evs, err = v.events(ctx, ui.AuditQuery{Request: "new", Tree: true, Principal: "alice", Owner: alice}, 10)
	if err != nil || len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("alice's tree=1 on her request not yet in the registry: %d events, %v; want its one", len(evs), err)
	}
	evs, err = v.events(ctx, ui.AuditQuery{Request: "bobs-new", Tree: true, Principal: "alice", Owner: alice}, 10)
	if err != nil || len(evs) != 0 {
		t.Fatalf("alice's tree=1 on bob's request not yet in the registry: %d events, %v; want none", len(evs), err)
	}
}

// TestAuditTreePageFilteredReadsBounded: a page of a tree whose filter
// keeps few of its events (a tool no call named, or another principal's
// events for one who is not an operator) reads at most maxTreeScan events
// and a chunk, then ends short with the cursor of the last event it read;
// the pages, followed to the end, show every event the filter keeps, each
// once, in seq order. Before, a page of 1 read the whole tree 2 at a time.
func TestAuditTreePageFilteredReadsBounded(t *testing.T) {
	ctx := context.Background()
	st := &counting{Memory: store.NewMemory()}
	for _, id := range []string{"root", "sub"} {
		parent := ""
		if id == "sub" {
			parent = "root"
		}
		if err := st.PutRequest(ctx, &store.Request{ID: id, Parent: parent, Principal: "bob", Tenant: "t", State: "running", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	const total = 3*maxTreeScan + 500
	var recs []*store.AuditRecord
	var want []int64
	for i := range total {
		seq := int64(i + 1)
		request, name := "root", "search"
		if i%2 == 1 {
			request = "sub"
		}
		if i%7919 == 0 {
			name = "refund"
			want = append(want, seq)
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: request,
			Data: []byte(`{"kind":"call","name":"` + name + `","request":"` + request + `","principal":"bob","tenant":"t"}`)})
	}
	if err := st.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	v := auditView{st: st}
	bob := &ui.Actor{Principal: "bob", Tenant: "t"}
	for _, limit := range []int{1, 2, 50} {
		var got []int64
		after := int64(0)
		for page := 0; ; page++ {
			if page > total {
				t.Fatalf("limit %d: the pages never end", limit)
			}
			st.records.Store(0)
			// the handler's fetch: one more than the page says there is a next one
			evs, stop, err := v.page(ctx, ui.AuditQuery{Request: "root", Tree: true, Tool: "refund", Principal: "bob", Owner: bob, After: after}, limit+1)
			if err != nil {
				t.Fatal(err)
			}
			if n := st.records.Load(); n > maxTreeScan+treeScanChunk {
				t.Fatalf("limit %d, page %d: %d events read for one page, want at most %d", limit, page, n, maxTreeScan+treeScanChunk)
			}
			next := stop
			if len(evs) > limit {
				evs = evs[:limit]
				next = evs[limit-1].Seq
			}
			for _, e := range evs {
				got = append(got, e.Seq)
			}
			if next == 0 {
				break
			}
			if next <= after {
				t.Fatalf("limit %d, page %d: cursor %d after %d", limit, page, next, after)
			}
			after = next
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("limit %d: the pages showed %v, want %v", limit, got, want)
		}
	}
}

// TestAuditOfAnotherNotRead: one who is not an operator, asking for the
// events of another principal's request (?request=ID, no tree), gets none,
// and the request's events are not read: any principal could make reach
// read and decode every event of any request whose id it had (185 MB and
// seconds for 100,000), and time it to learn their number. Its own request,
// and one the registry does not hold (just begun, or removed), are read.
func TestAuditOfAnotherNotRead(t *testing.T) {
	ctx := context.Background()
	st := &counting{Memory: store.NewMemory()}
	if err := st.PutRequest(ctx, &store.Request{ID: "bobs", Principal: "bob", Tenant: "t", State: "running", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var recs []*store.AuditRecord
	for i := range 1000 {
		recs = append(recs, &store.AuditRecord{Seq: int64(i + 1), Time: time.Now(), Request: "bobs",
			Data: []byte(`{"kind":"call","request":"bobs","principal":"bob","tenant":"t"}`)})
	}
	recs = append(recs, &store.AuditRecord{Seq: 1001, Time: time.Now(), Request: "gone",
		Data: []byte(`{"kind":"call","request":"gone","principal":"alice","tenant":"t"}`)})
	if err := st.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	v := auditView{st: st}
	for _, c := range []struct {
		who, request string
		events       int
	}{{"alice", "bobs", 0}, {"bob", "bobs", 100}, {"alice", "gone", 1}, {"bob", "gone", 0}} {
		st.records.Store(0)
		who := &ui.Actor{Principal: c.who, Tenant: "t"}
		evs, err := v.events(ctx, ui.AuditQuery{Request: c.request, Principal: c.who, Owner: who}, 100)
		if err != nil || len(evs) != c.events {
			t.Fatalf("%s asking for %s: %d events, %v; want %d", c.who, c.request, len(evs), err, c.events)
		}
		if n := st.records.Load(); c.who == "alice" && c.request == "bobs" && n != 0 {
			t.Fatalf("alice asking for bob's request: %d of its events read, want none", n)
		}
	}
}
