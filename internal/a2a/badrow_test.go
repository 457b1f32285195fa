package a2a

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/store"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A stored task whose data does not decode is answered as not found and
// left out of the list, beside the tasks that do; the gateway logs a
// warning naming it, and the record is kept as it is.
func TestUnreadableStoredTask(t *testing.T) {
	st := store.NewMemory()
	a := newHarness(t, nil, "planner")
	for _, rec := range []*store.TaskRecord{
		{Agent: "planner", ID: "t-bad", Principal: "alice", State: "working", Data: []byte(`{not`)},
		{Agent: "planner", ID: "t-good", Principal: "alice", State: "completed", Final: true,
			Data: []byte(`{"id":"t-good","contextId":"c1","kind":"task","status":{"state":"completed"}}`)},
	} {
		if _, err := st.PutTask(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuf
	b := &harness{t: t, rt: reach.New(nil), agents: a.agents, audit: &memAudit{}}
	g, err := New(t.Context(), &Options{Agents: []Agent{{Name: "planner", URL: a.agents["planner"].srv.URL}}, Runtime: b.rt,
		Link: testLinker{b.rt}, Identity: testIdentity{}, CancelTimeout: 5 * time.Second, Tasks: st,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b.g = g
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.g.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, r.Header.Get("X-Who"))))
	}))
	t.Cleanup(func() { b.srv.Close(); b.g.Close() })

	c := b.client("planner", "alice", false)
	if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "t-bad"}); err == nil {
		t.Error("GetTask of the unreadable task answered it")
	}
	list, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != "t-good" {
		t.Fatalf("ListTasks: %v, %v; want the readable task alone", list, err)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "table=tasks") || !strings.Contains(l, "t-bad") {
		t.Errorf("no warning naming the task:\n%s", l)
	}
	if rec, err := st.GetTask(t.Context(), "planner", "t-bad"); err != nil || string(rec.Data) != `{not` {
		t.Errorf("the record now: %+v, %v; want it kept", rec, err)
	}
}
