package modelproxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentreach/reach"
)

// TestToolCalls: the tool calls of a stream are recorded once complete —
// when the next one begins, when the choice finishes, or at the end —
// with their arguments joined from every chunk; those of a whole answer
// at once.
func TestToolCalls(t *testing.T) {
	type rec struct{ ID, Name, Args string }
	var got []rec
	tc := toolCalls{record: func(id, name string, args []byte) { got = append(got, rec{id, name, string(args)}) }}
	chunks := []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"a","arguments":""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`,
	}
	for _, c := range chunks {
		tc.add([]byte(c))
	}
	if len(got) != 0 {
		t.Fatalf("recorded before complete: %v", got)
	}
	tc.add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"b","arguments":"{}"}}]}}]}`))
	if diff := cmp.Diff([]rec{{"c1", "a", `{"q":1}`}}, got); diff != "" {
		t.Fatalf("when the second call began (-want +got):\n%s", diff)
	}
	tc.add([]byte(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`))
	tc.end()
	if diff := cmp.Diff([]rec{{"c1", "a", `{"q":1}`}, {"c2", "b", `{}`}}, got); diff != "" {
		t.Errorf("at the finish (-want +got):\n%s", diff)
	}
	got = nil
	whole := toolCalls{record: func(id, name string, args []byte) { got = append(got, rec{id, name, string(args)}) }}
	whole.add([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"id":"w1","type":"function","function":{"name":"x","arguments":"{\"a\":2}"}}]},"finish_reason":"tool_calls"}]}`))
	whole.end()
	if diff := cmp.Diff([]rec{{"w1", "x", `{"a":2}`}}, got); diff != "" {
		t.Errorf("a whole answer (-want +got):\n%s", diff)
	}
}

// TestCapTokens: the answer is capped at what is left, in the field the
// client used (max_completion_tokens when it set none), each of n choices
// at an n-th, and a cap below what it asked for (or a small one) is
// reported. A turn that sets no cap is sent one only when what is left is
// below the model's output limit (limit; 0: defaultOutputLimit).
func TestCapTokens(t *testing.T) {
	for _, tc := range []struct {
		body   string
		max    int64
		want   string
		capped bool
		api    apiKind
		limit  int64
	}{
		{`{}`, 5000, `{}`, false, chatAPI, 0},
		{`{}`, 3000, `{"max_completion_tokens":3000}`, false, chatAPI, 0},
		{`{}`, 5000, `{"max_completion_tokens":5000}`, false, chatAPI, 16384},
		{`{}`, 16384, `{}`, false, chatAPI, 16384},
		{`{}`, 1500, `{}`, true, chatAPI, 1024}, // told all the same: little is left
		{`{}`, 100, `{"max_completion_tokens":100}`, true, chatAPI, 0},
		{`{"max_tokens":300}`, 5000, `{"max_tokens":300}`, false, chatAPI, 0},
		{`{"max_tokens":300}`, 200, `{"max_tokens":200}`, true, chatAPI, 0},
		{`{"max_completion_tokens":9000,"max_tokens":null}`, 4000, `{"max_completion_tokens":4000,"max_tokens":null}`, true, chatAPI, 0},
		// n choices: each is capped, and all are spent.
		{`{"n":4}`, 40000, `{"n":4}`, false, chatAPI, 0},
		{`{"n":4}`, 40000, `{"max_completion_tokens":10000,"n":4}`, false, chatAPI, 16384},
		{`{"n":4}`, 5000, `{"max_completion_tokens":1250,"n":4}`, true, chatAPI, 0},
		{`{"n":5,"max_tokens":300}`, 1000, `{"max_tokens":200,"n":5}`, true, chatAPI, 0},
		{`{"n":3,"max_tokens":300}`, 5000, `{"max_tokens":300,"n":3}`, false, chatAPI, 0},
		{`{"n":8}`, 3, `{"max_completion_tokens":1,"n":8}`, true, chatAPI, 0},
		{`{"n":1}`, 5000, `{"n":1}`, false, chatAPI, 0},
		{`{"n":1}`, 4000, `{"max_completion_tokens":4000,"n":1}`, false, chatAPI, 0},
		// n as the servers read it: 4.0 and "4" are four choices.
		{`{"n":4.0}`, 5000, `{"max_completion_tokens":1250,"n":4.0}`, true, chatAPI, 0},
		{`{"n":"4"}`, 5000, `{"max_completion_tokens":1250,"n":"4"}`, true, chatAPI, 0},
		{`{"n":2.5}`, 4000, `{"max_completion_tokens":4000,"n":2.5}`, false, chatAPI, 0},
		// The Responses API's cap is max_output_tokens, never under 16.
		{`{}`, 5000, `{}`, false, responsesAPI, 0},
		{`{}`, 4000, `{"max_output_tokens":4000}`, false, responsesAPI, 0},
		{`{"max_output_tokens":300}`, 200, `{"max_output_tokens":200}`, true, responsesAPI, 0},
		{`{"max_output_tokens":300,"max_tokens":900}`, 5000, `{"max_output_tokens":300,"max_tokens":900}`, false, responsesAPI, 0},
		{`{}`, 3, `{"max_output_tokens":16}`, true, responsesAPI, 0},
	} {
		var body map[string]json.RawMessage
		json.Unmarshal([]byte(tc.body), &body)
		limit := tc.limit
		if limit == 0 {
			limit = defaultOutputLimit
		}
		capped := capTokens(tc.api, body, tc.max, limit)
		got, _ := json.Marshal(body)
		if string(got) != tc.want || capped != tc.capped {
			t.Errorf("capTokens(%d, %s, %d) = %s, %v; want %s, %v", tc.api, tc.body, tc.max, got, capped, tc.want, tc.capped)
		}
	}
}

// TestRefuseTransient: a turn refused because the shared store did not
// answer is a 503 that clients retry, not a stop: the agent was told to
// finish with what it had, and its SDK not to retry, when nothing had been
// decided.
func TestRefuseTransient(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		retry  string
		finish bool
	}{
		{&reach.Error{Type: reach.TypeTransient, Code: "store_unavailable", Message: "The shared budget could not be checked.", Suggestion: "Nothing ran. Try again in a moment."},
			http.StatusServiceUnavailable, "true", false},
		{&reach.Error{Type: reach.TypeBudget, Code: "budget_tokens", Message: "Spent."}, http.StatusPaymentRequired, "false", true},
		{&reach.StopError{Cause: reach.Cause{Request: "r1", Mode: reach.Cancel, By: "alice", Reason: "enough"}}, http.StatusForbidden, "false", true},
	} {
		w := httptest.NewRecorder()
		refuse(w, nil, tc.err)
		if w.Code != tc.status || w.Header().Get("X-Should-Retry") != tc.retry || strings.Contains(w.Body.String(), "Do not retry") != tc.finish {
			t.Errorf("%v: %d x-should-retry %q %s; want %d %q", tc.err, w.Code, w.Header().Get("X-Should-Retry"), w.Body.String(), tc.status, tc.retry)
		}
	}
}

// FuzzToolCalls: any chunks, any history, any text: no panic.
func FuzzToolCalls(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"a","arguments":"{"}}]},"finish_reason":"tool_calls"}]}`))
	f.Add([]byte(`[{"role":"assistant","tool_calls":[{"id":"a"}]},{"role":"tool","tool_call_id":"a"}]`))
	f.Add([]byte(`{"choices":[{"index":-1,"delta":{"tool_calls":[{"index":-5}]}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tc := toolCalls{record: func(string, string, []byte) {}}
		tc.add(b)
		tc.add(b)
		tc.end()
		historyIDs(b, true)
		textAction(string(b))
	})
}
