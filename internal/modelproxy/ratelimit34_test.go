package modelproxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// burstLimiter lets burst turns pass, then refuses every other for an
// hour, from its bucket "per-principal".
type burstLimiter struct{ left atomic.Int64 }

func (l *burstLimiter) Allow(string, int) (time.Duration, string) {
	if l.left.Add(-1) >= 0 {
		return 0, ""
	}
	return time.Hour, "per-principal"
}

// eventLog keeps the audit events a runtime records.
type eventLog struct {
	mu     sync.Mutex
	events []*reach.Event
}

func (l *eventLog) Record(_ context.Context, e *reach.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// TestRateLimitedTurnRecorded (R8): a model turn refused by the model's
// rate limit is recorded as the other refusals are: a model frame of its
// request, refused with rate_limited (the request's graph shows it), and
// its audit event; it reaches no model and counts no turn. Before, it left
// a log line only.
func TestRateLimitedTurnRecorded(t *testing.T) {
	up, asked := countingModel(t, okCompletion)
	log := &eventLog{}
	rt := reach.New(&reach.Options{Recorder: log})
	lim := &burstLimiter{}
	lim.left.Store(1)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Limits: lim,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	for i, want := range []int{http.StatusOK, http.StatusForbidden} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"go"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(link.HeaderRequest, "req-rate")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("turn %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the model was asked %d times, want 1", n)
	}
	r := requestNamed(t, rt, "req-rate")
	if u := r.Usage(); u.Turns != 1 {
		t.Errorf("the request counted %d turns, want 1 (the refused one counts none)", u.Turns)
	}
	var refused *reach.Frame
	for _, f := range r.Frames() {
		if f.Kind == reach.ModelFrame && f.State() == reach.Refused {
			refused = f
		}
	}
	if refused == nil || refused.Err() == nil || refused.Err().Code != "rate_limited" || !strings.Contains(refused.Err().Message, "per-principal") {
		t.Fatalf("the request's frames show no turn refused for its rate limit: %+v", refused)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	var audited bool
	for _, e := range log.events {
		if e.Frame == refused.ID && e.State == reach.Refused && e.Error != nil && e.Error.Code == "rate_limited" {
			audited = true
		}
	}
	if !audited {
		t.Errorf("no audit event of the refused turn among %d", len(log.events))
	}
}
