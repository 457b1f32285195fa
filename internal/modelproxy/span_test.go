package modelproxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/telemetry"
)

// TestTurnSpanNamedByItsRoute: a served model turn's SERVER span is named
// by the route it came in at: a Responses API turn's "POST /v1/responses"
// (http.route too), a chat completion's "POST /v1/chat/completions".
func TestTurnSpanNamedByItsRoute(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := telemetry.NewTracer(exp, &telemetry.TracerOptions{Sync: true, Served: true})
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	rt := reach.New(&reach.Options{Recorder: tr})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/responses") {
			(&fakeResponses{text: "hi"}).ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"c1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`))
	}))
	defer up.Close()
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	for _, path := range []string{"/v1/responses", "/v1/chat/completions"} {
		body := `{"model":"m","input":"hi"}`
		if path == "/v1/chat/completions" {
			body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
		}
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	for _, r := range rt.Requests() {
		r.End()
	}
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == "http.route" {
				served = append(served, s.Name+" "+a.Value.AsString())
			}
		}
	}
	slices.Sort(served)
	want := []string{"POST /v1/chat/completions /v1/chat/completions", "POST /v1/responses /v1/responses"}
	if !slices.Equal(served, want) {
		t.Errorf("served spans (name, http.route) = %q; want %q", served, want)
	}
}
