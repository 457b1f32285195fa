package modelproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
)

// endpointAt is an endpoint that answers status and body while down is
// set, and as fake otherwise, counting the requests it was sent.
type endpointAt struct {
	fake   http.Handler
	down   atomic.Bool
	status int
	body   string
	asked  atomic.Int64
}

func (e *endpointAt) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.asked.Add(1)
	if e.down.Load() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(e.status)
		w.Write([]byte(e.body))
		return
	}
	e.fake.ServeHTTP(w, r)
}

// fallbackProxy is a proxy in front of primary, with fallbacks in front
// of the others (a fallback of the same URL and key as the one before it
// when sameAccount), asking for model gpt-test.
func fallbackProxy(t *testing.T, primary http.Handler, sameAccount bool, others ...http.Handler) (*httptest.Server, *reach.Runtime) {
	t.Helper()
	up := httptest.NewServer(primary)
	t.Cleanup(up.Close)
	mc := &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "gpt-test", APIKey: config.Secret("sk-primary")}
	if sameAccount {
		mc.Fallbacks = append(mc.Fallbacks, config.ModelFallback{BaseURL: up.URL + "/v1", Model: "gpt-test-mini", APIKey: mc.APIKey})
	}
	for _, o := range others {
		s := httptest.NewServer(o)
		t.Cleanup(s.Close)
		mc.Fallbacks = append(mc.Fallbacks, config.ModelFallback{BaseURL: s.URL + "/v1", Model: "other", APIKey: config.Secret("sk-other")})
	}
	rt := reach.New(nil)
	p := New(&Options{Model: mc, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv, rt
}

// TestResponsesFallbackWhenUnserved: an endpoint that does not serve the
// Responses API (404 for its route, 405) is passed over for the next, and
// its breaker counts no failure (its chat completions may be fine); a 4xx
// about what the request named (an invalid input, a model it does not
// know) is the client's, passed on, the fallback not asked.
func TestResponsesFallbackWhenUnserved(t *testing.T) {
	for _, c := range []struct {
		name     string
		status   int
		body     string
		failOver bool
	}{
		{"route not found", 404, `{"detail":"Not Found"}`, true},
		{"OpenAI's invalid URL", 404, `{"error":{"message":"Invalid URL (POST /v1/responses)","type":"invalid_request_error","param":null,"code":null}}`, true},
		{"method not allowed", 405, `{"error":"Method Not Allowed"}`, true},
		{"invalid input", 400, `{"error":{"message":"Invalid type for 'input'.","type":"invalid_request_error","param":"input","code":"invalid_type"}}`, false},
		{"model not found", 404, `{"error":{"message":"The model ` + "`gpt-test`" + ` does not exist.","type":"invalid_request_error","code":"model_not_found"}}`, false},
		{"an unknown input item", 404, `{"error":{"message":"Item with id 'rs_7' not found. Items are not persisted when ` + "`store`" + ` is set to false.","type":"invalid_request_error","param":"input","code":null}}`, false},
		{"a parameter's unknown id", 404, `{"error":{"message":"No such object.","type":"invalid_request_error","param":"tools[0].vector_store_ids","code":null}}`, false},
		{"vLLM's unknown model", 404, `{"object":"error","message":"The model ` + "`gpt-test`" + ` does not exist.","type":"NotFoundError","code":404}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			primary := &endpointAt{status: c.status, body: c.body}
			primary.down.Store(true)
			fallback := &endpointAt{fake: &fakeResponses{text: "hi"}}
			srv, rt := fallbackProxy(t, primary, false, fallback)
			for range 6 { // past any breaker's threshold
				resp, b := postResponses(t, srv.URL, `{"input":"hi"}`, nil)
				if c.failOver && (resp.StatusCode != 200 || resp.Header.Get(HeaderFallback) == "") {
					t.Fatalf("answer: %d %s (fallback %q); want the fallback's 200", resp.StatusCode, b, resp.Header.Get(HeaderFallback))
				}
				if !c.failOver && (resp.StatusCode != c.status || fallback.asked.Load() != 0) {
					t.Fatalf("answer: %d %s, fallback asked %d times; want the primary's %d, the fallback not asked", resp.StatusCode, b, fallback.asked.Load(), c.status)
				}
			}
			for _, s := range rt.Breakers() {
				if s.Kind == "model" && s.Failures > 0 {
					t.Errorf("breaker %s counted %d failures, state %v; want none", s.Name, s.Failures, s.State)
				}
			}
		})
	}
}

// TestResponsesPreviousStaysWithItsEndpoint: only the endpoint that gave
// an answer keeps its history: a turn naming it goes there (a fallback
// answered it while the model's endpoint was down: to the fallback), or
// to an endpoint of the same account (URL and key); a fallback elsewhere
// is not asked when that endpoint fails, and the error says why and what
// to do.
func TestResponsesPreviousStaysWithItsEndpoint(t *testing.T) {
	primary := &endpointAt{fake: &fakeResponses{text: "hi"}, status: 500, body: `{"error":{"message":"overloaded","type":"server_error"}}`}
	other := &endpointAt{fake: &fakeResponses{text: "hi"}, status: 500, body: `{"error":{"message":"overloaded","type":"server_error"}}`}
	srv, _ := fallbackProxy(t, primary, false, other)
	id := func(b string) string {
		var a struct{ ID string }
		json.Unmarshal([]byte(b), &a)
		return a.ID
	}
	_, b := postResponses(t, srv.URL, `{"input":"hi"}`, nil)
	fromPrimary := id(b)
	primary.down.Store(true)
	resp, b := postResponses(t, srv.URL, `{"input":"hi","previous_response_id":"`+fromPrimary+`"}`, nil)
	if resp.StatusCode != 500 || other.asked.Load() != 0 || !strings.Contains(b, "previous_response_id") || !strings.Contains(b, "in input") {
		t.Errorf("a turn after the primary's answer, the primary down: %d %s, fallback asked %d times; want 500 saying why the fallback was not asked",
			resp.StatusCode, b, other.asked.Load())
	}
	resp, b = postResponses(t, srv.URL, `{"input":"hi"}`, nil)
	if resp.StatusCode != 200 || other.asked.Load() != 1 {
		t.Fatalf("a first turn, the primary down: %d %s; want the fallback's answer", resp.StatusCode, b)
	}
	fromOther := id(b)
	primary.down.Store(false)
	asked := primary.asked.Load()
	resp, b = postResponses(t, srv.URL, `{"input":"hi","previous_response_id":"`+fromOther+`"}`, nil)
	if resp.StatusCode != 200 || primary.asked.Load() != asked || other.asked.Load() != 2 {
		t.Errorf("a turn after the fallback's answer: %d %s, primary asked %d more; want it sent to the fallback only", resp.StatusCode, b, primary.asked.Load()-asked)
	}

	// A fallback of the same account keeps the same answers.
	primary2 := &endpointAt{fake: &fakeResponses{text: "hi"}, status: 500, body: `{}`}
	srv2, _ := fallbackProxy(t, primary2, true)
	_, b = postResponses(t, srv2.URL, `{"input":"hi"}`, nil)
	primary2.down.Store(true)
	resp, b = postResponses(t, srv2.URL, `{"input":"hi","previous_response_id":"`+id(b)+`"}`, nil)
	if resp.StatusCode != 500 || primary2.asked.Load() != 3 {
		t.Errorf("a turn after an answer, the model down, a fallback on its account: %d %s, asked %d times; want both asked (3)", resp.StatusCode, b, primary2.asked.Load())
	}
}

// TestResponsesItemsStayWithTheirEndpoint: an input item that carries an
// id is read from the endpoint that gave it, as previous_response_id's
// answer is: a turn naming an item a fallback gave goes to that fallback,
// not to the model's endpoint, which keeps no such item, and when it
// fails no endpoint elsewhere is asked.
func TestResponsesItemsStayWithTheirEndpoint(t *testing.T) {
	overloaded := `{"error":{"message":"overloaded","type":"server_error"}}`
	primary := &endpointAt{fake: &itemsFake{prefix: "a"}, status: 500, body: overloaded}
	other := &endpointAt{fake: &itemsFake{prefix: "b"}, status: 500, body: overloaded}
	srv, _ := fallbackProxy(t, primary, false, other)
	primary.down.Store(true)
	resp, b := postResponses(t, srv.URL, `{"input":"hi"}`, nil)
	if resp.StatusCode != 200 || !strings.Contains(b, `"msg_b1"`) {
		t.Fatalf("a first turn, the model's endpoint down: %d %s; want the fallback's msg_b1", resp.StatusCode, b)
	}
	primary.down.Store(false)
	asked := primary.asked.Load()
	turn := `{"input":[{"type":"item_reference","id":"msg_b1"},{"role":"user","content":"go on"}]}`
	resp, b = postResponses(t, srv.URL, turn, nil)
	if resp.StatusCode != 200 || primary.asked.Load() != asked || other.asked.Load() != 2 {
		t.Errorf("a turn naming the fallback's item: %d %s, the model's endpoint asked %d more, the fallback %d times; want the fallback's answer only",
			resp.StatusCode, b, primary.asked.Load()-asked, other.asked.Load())
	}
	other.down.Store(true)
	resp, b = postResponses(t, srv.URL, turn, nil)
	if resp.StatusCode != 500 || primary.asked.Load() != asked || !strings.Contains(b, "item") {
		t.Errorf("a turn naming the fallback's item, the fallback down: %d %s, the model's endpoint asked %d more; want the fallback's 500 saying why no other was asked",
			resp.StatusCode, b, primary.asked.Load()-asked)
	}
	// An item sent with its content may be answered by any endpoint: the
	// one that gave it is asked first, then the others.
	full := `{"input":[{"type":"message","id":"msg_b1","role":"assistant","content":[{"type":"output_text","text":"secret plan"}]},{"role":"user","content":"go on"}]}`
	other.down.Store(false)
	asked, otherAsked := primary.asked.Load(), other.asked.Load()
	if resp, b = postResponses(t, srv.URL, full, nil); resp.StatusCode != 200 || primary.asked.Load() != asked || other.asked.Load() != otherAsked+1 {
		t.Errorf("a turn with the fallback's item in full: %d %s, the model's endpoint asked %d more, the fallback %d; want the fallback asked first",
			resp.StatusCode, b, primary.asked.Load()-asked, other.asked.Load()-otherAsked)
	}
	other.down.Store(true)
	if resp, b = postResponses(t, srv.URL, full, nil); resp.StatusCode != 200 || primary.asked.Load() != asked+1 {
		t.Errorf("a turn with the fallback's item in full, the fallback down: %d %s; want the model's endpoint's answer", resp.StatusCode, b)
	}
}
