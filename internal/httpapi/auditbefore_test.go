package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/store"
)

// A full page of a request's events carries "before", the cursor of its
// older events, so that a client pages a request of 1,200 events (among
// another's) with limit=500 back to its first event, each event once; the
// page that reaches the first event has none. The UI's audit page of the
// request (500 rows) links the older events while there are some, and not
// on its last page. Before, only a page that ended short had the cursor:
// the events older than the newest 500 could not be read.
func TestAuditRequestFullPageHasBefore(t *testing.T) {
	ctx := t.Context()
	st := store.NewMemory()
	var recs []*store.AuditRecord
	want := map[int64]bool{}
	for seq := int64(1); seq <= 1800; seq++ {
		req := "long"
		if seq%3 == 0 {
			req = "other"
		} else {
			want[seq] = true
		}
		recs = append(recs, &store.AuditRecord{Seq: seq, Time: time.Now(), Request: req, PrevHash: []byte{0}, Hash: []byte{0},
			Data: fmt.Appendf(nil, `{"kind":"tool","name":"search_kb","decision":"completed","request":%q,"principal":"alice"}`, req)})
	}
	if err := st.AppendAudit(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	if len(want) != 1200 {
		t.Fatalf("%d events of the request; want 1,200", len(want))
	}
	a := newAPI(&Options{Runtime: reach.New(&reach.Options{}), Store: st, Tools: noTools{}, Approvals: approval.New(nil),
		Metrics: http.NotFoundHandler(), MCP: http.NotFoundHandler(), Model: http.NotFoundHandler()})
	get := func(path string) string {
		t.Helper()
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1:7400"+path, nil))
		b, _ := io.ReadAll(w.Result().Body)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, w.Code, b)
		}
		return string(b)
	}

	seen := map[int64]int{}
	var sizes []int
	path := "/v1/audit?request=long&limit=500"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("more than 5 pages of 500 for 1,200 events")
		}
		var body struct {
			Events []struct{ Seq int64 } `json:"events"`
			Before *int64                `json:"before"`
		}
		if err := json.Unmarshal([]byte(get(path)), &body); err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(body.Events))
		for _, e := range body.Events {
			seen[e.Seq]++
		}
		if body.Before == nil {
			break
		}
		if len(body.Events) == 0 || *body.Before != body.Events[0].Seq {
			t.Fatalf("page %d: before %d with %d events; want the seq of its oldest event", pages, *body.Before, len(body.Events))
		}
		path = fmt.Sprintf("/v1/audit?request=long&limit=500&before=%d", *body.Before)
	}
	if fmt.Sprint(sizes) != "[500 500 200]" {
		t.Errorf("pages of %v events; want [500 500 200], the last without before", sizes)
	}
	for seq := range want {
		if seen[seq] != 1 {
			t.Errorf("event %d on %d pages; want 1", seq, seen[seq])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d events paged; want the request's %d", len(seen), len(want))
	}
	// A request of exactly one page has no cursor: the page reached its first event.
	if body := get("/v1/audit?request=long&limit=500&before=751"); strings.Contains(body, `"before"`) {
		t.Errorf("the page of the 500 events before 751, the request's first 500, has a cursor: %.200s", body)
	}

	page := get("/ui/audit?request=long")
	older := `href="/ui/audit?before=`
	if !strings.Contains(page, older) || !strings.Contains(page, ">older events</a>") {
		t.Fatalf("the UI's full page of a request of 1,200 events links no older events:\n%.2000s", page)
	}
	for pages := 1; strings.Contains(page, older); pages++ {
		if pages > 3 {
			t.Fatalf("the UI's page links older events past the request's first")
		}
		i := strings.Index(page, older) + len(`href="`)
		link := page[i : i+strings.IndexByte(page[i:], '"')]
		page = get(strings.ReplaceAll(link, "&amp;", "&"))
	}
	if !strings.Contains(page, "<tr><td>1</td>") || strings.Contains(page, ">older events</a>") {
		t.Errorf("the UI's last page does not end at the request's first event (seq 1), or links older ones:\n%.2000s", page)
	}
}
