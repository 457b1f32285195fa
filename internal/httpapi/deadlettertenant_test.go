package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/redact"
	"github.com/agentreach/reach/internal/store"
)

// listCountingQueue is a dead letter queue in memory that records the
// states it is listed in.
type listCountingQueue struct {
	reach.DeadLetterQueue
	mu     sync.Mutex
	states []reach.DeadLetterState
}

func (q *listCountingQueue) List(ctx context.Context, state reach.DeadLetterState) ([]reach.DeadLetter, error) {
	q.mu.Lock()
	q.states = append(q.states, state)
	q.mu.Unlock()
	return q.DeadLetterQueue.List(ctx, state)
}

// readCountingStore counts the requests read from it.
type readCountingStore struct {
	*store.Memory
	mu    sync.Mutex
	reads map[string]int
}

func (s *readCountingStore) GetRequest(ctx context.Context, id string) (*store.Request, error) {
	s.mu.Lock()
	s.reads[id]++
	s.mu.Unlock()
	return s.Memory.GetRequest(ctx, id)
}

// TestTenantOperatorDeadLettersReadOnce: a tenant's operator's list of
// dead letters reads each request's tenant once, however many of its
// undos were dead-lettered (it read the request again for each), and its
// retry or dismissal reads the open dead letters only (it listed every one
// the queue ever held, settled ones too, to find the one it names).
func TestTenantOperatorDeadLettersReadOnce(t *testing.T) {
	ctx := context.Background()
	st := &readCountingStore{Memory: store.NewMemory(), reads: map[string]int{}}
	for id, tenant := range map[string]string{"acme-trip": "acme", "globex-trip": "globex"} {
		if err := st.PutRequest(ctx, &store.Request{ID: id, Principal: "alice", Tenant: tenant, State: "ended"}); err != nil {
			t.Fatal(err)
		}
	}
	q := &listCountingQueue{DeadLetterQueue: reach.NewMemoryDeadLetters()}
	var acme []string
	for i, req := range []string{"acme-trip", "acme-trip", "acme-trip", "globex-trip", "globex-trip"} {
		d := &reach.DeadLetter{Request: req, Tool: "release", Args: json.RawMessage(`{}`), Key: "undo:" + req + "/" + string(rune('a'+i))}
		if err := q.Add(ctx, d); err != nil {
			t.Fatal(err)
		}
		if req == "acme-trip" {
			acme = append(acme, d.ID)
		}
	}
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	a := &API{rt: reach.New(&reach.Options{DeadLetters: q}), store: st, authn: &auth.Authenticator{}, redactor: red}
	asOps := func(r *http.Request) *http.Request {
		return r.WithContext(auth.WithIdentity(r.Context(), &auth.Identity{Principal: "ops", Tenant: "acme", Roles: []string{"operator"}}))
	}

	w := httptest.NewRecorder()
	a.listDeadLetters(w, asOps(httptest.NewRequest("GET", "/v1/deadletters", nil)))
	var out struct {
		Deadletters []struct{ ID, Request string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); w.Code != 200 || err != nil {
		t.Fatalf("list = %d %s", w.Code, w.Body)
	}
	if len(out.Deadletters) != 3 || slices.ContainsFunc(out.Deadletters, func(d struct{ ID, Request string }) bool { return d.Request != "acme-trip" }) {
		t.Errorf("ops@acme's list = %+v, want acme-trip's three", out.Deadletters)
	}
	if st.reads["acme-trip"] != 1 || st.reads["globex-trip"] != 1 {
		t.Errorf("listing read the requests %v times, want each once", st.reads)
	}

	for _, id := range acme {
		q.mu.Lock()
		q.states = nil
		q.mu.Unlock()
		r := asOps(httptest.NewRequest("POST", "/v1/deadletters/"+id+"/dismiss", strings.NewReader(`{"note":"settled by hand"}`)))
		r.SetPathValue("id", id)
		w := httptest.NewRecorder()
		a.dismissDeadLetter(w, r)
		if w.Code != 200 {
			t.Fatalf("dismissing %s = %d %s", id, w.Code, w.Body)
		}
		q.mu.Lock()
		states := slices.Clone(q.states)
		q.mu.Unlock()
		if !slices.Equal(states, []reach.DeadLetterState{reach.DeadLetterOpen}) {
			t.Errorf("dismissing %s listed the dead letters in states %q, want the open ones only", id, states)
		}
	}
}
