package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach/internal/store"
	"github.com/agentreach/reach/internal/ui"
)

// midRead is a store that reads a request's events one request at a time
// (no store.RequestsAuditor) and whose first read of request sub's events
// commits a batch first: one event of root's (read already) and one of
// sub's, as another writer's commit lands between the tree's reads.
type midRead struct {
	store.Store
	mem  *store.Memory
	once sync.Once
}

func (m *midRead) RequestAudit(ctx context.Context, request string) ([]*store.AuditRecord, error) {
	if request == "sub" {
		m.once.Do(func() { appendEvents(m.mem, "root", "sub") })
	}
	return m.mem.RequestAudit(ctx, request)
}

// midPage is a store.RequestsAuditor whose first read of a page commits a
// batch of the tree's first: after the page's head was read.
type midPage struct {
	*store.Memory
	once sync.Once
}

func (m *midPage) RequestsAudit(ctx context.Context, requests []string, after, upTo int64, limit int) ([]*store.AuditRecord, error) {
	m.once.Do(func() { appendEvents(m.Memory, "root", "sub") })
	return m.Memory.RequestsAudit(ctx, requests, after, upTo, limit)
}

func appendEvents(st *store.Memory, requests ...string) {
	head, _, _ := st.AuditHead(context.Background())
	var recs []*store.AuditRecord
	for i, r := range requests {
		recs = append(recs, &store.AuditRecord{Seq: head + 1 + int64(i), Time: time.Now(), Request: r, Data: []byte(`{"kind":"call","request":"` + r + `"}`)})
	}
	if err := st.AppendAudit(context.Background(), recs, nil); err != nil {
		panic(err)
	}
}

// TestAuditTreePagesSkipNothing: an event committed while a page of a
// tree is read, numbered before one of a request read later, is on a
// page: the cursor never passes an event no page showed.
func TestAuditTreePagesSkipNothing(t *testing.T) {
	for _, name := range []string{"request by request", "a page of the set"} {
		t.Run(name, func(t *testing.T) { testAuditTreePagesSkipNothing(t, name == "a page of the set") })
	}
}

func testAuditTreePagesSkipNothing(t *testing.T, paged bool) {
	mem := store.NewMemory()
	ctx := context.Background()
	for _, r := range []*store.Request{{ID: "root", State: "running", Started: time.Now()}, {ID: "sub", Parent: "root", State: "running", Started: time.Now()}} {
		if err := mem.PutRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	appendEvents(mem, "root", "sub")
	var st store.Store = &midRead{Store: mem, mem: mem}
	if paged {
		st = &midPage{Memory: mem}
	}
	v := auditView{st: st}
	seen := map[int64]int{}
	var after int64
	for page := 0; page < 10; page++ {
		evs, err := v.events(ctx, ui.AuditQuery{Request: "root", Tree: true, After: after}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			seen[e.Seq]++
		}
		after = evs[len(evs)-1].Seq
	}
	head, _, _ := mem.AuditHead(ctx)
	for seq := int64(1); seq <= head; seq++ {
		if seen[seq] != 1 {
			t.Errorf("event %d shown %d times across the pages (of %d events: %v)", seq, seen[seq], head, seen)
		}
	}
}

// TestAuditTreeCap: a tree of maxTreeRequests requests is read; one more
// is errTreeTooLarge (the API's 422 tree_too_large), not a partial page.
func TestAuditTreeCap(t *testing.T) {
	mem := store.NewMemory()
	ctx := context.Background()
	put := func(id, parent string) {
		if err := mem.PutRequest(ctx, &store.Request{ID: id, Parent: parent, State: "ended", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	put("root", "")
	for i := 1; i < maxTreeRequests; i++ { // a chain and a fan: the root's subs, and one's subs
		parent := "root"
		if i > maxTreeRequests/2 {
			parent = "sub-1"
		}
		put(fmt.Sprintf("sub-%d", i), parent)
	}
	appendEvents(mem, "root", "sub-1", fmt.Sprintf("sub-%d", maxTreeRequests-1))
	v := auditView{st: mem}
	evs, err := v.events(ctx, ui.AuditQuery{Request: "root", Tree: true}, 10)
	if err != nil || len(evs) != 3 {
		t.Fatalf("a tree of %d requests: %d events, %v; want its 3", maxTreeRequests, len(evs), err)
	}
	put("one-more", "sub-1")
	if _, err := v.events(ctx, ui.AuditQuery{Request: "root", Tree: true}, 10); !errors.Is(err, errTreeTooLarge) {
		t.Fatalf("a tree of %d requests: %v, want errTreeTooLarge", maxTreeRequests+1, err)
	}
}
