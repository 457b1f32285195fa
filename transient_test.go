package reach_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentreach/reach"
)

// retryTurns calls tool with the same arguments n times, each in its own
// model turn, and returns the results.
func retryTurns(t *testing.T, rt *reach.Runtime, tool string, n int) []*reach.Result {
	t.Helper()
	ctx, _ := begin(t, rt, nil)
	var out []*reach.Result
	for i := range n {
		turn(t, rt, ctx, func(ctx context.Context) {
			out = append(out, rt.Call(ctx, &reach.Call{ID: fmt.Sprint(i), Tool: tool, Arguments: json.RawMessage(`{"sku":"A-7"}`)}))
		})
	}
	return out
}

// TestRetryableErrorIsTransient: the error results of a tool declared
// Retryable are transient, whatever the tool calls them: retrying the same
// call after "503 temporarily overloaded" is not a repeat (the third and
// fourth tries run), and the retry budget bounds it (the fifth is refused
// as loop_retry_budget). The same failure of a tool that is not declared
// retryable, and whose message says nothing of the kind, is a repeat: the
// third try is refused.
func TestRetryableErrorIsTransient(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retryable bool
		err       error
		runs      int    // tries that reach the tool
		refused   string // the code of the first refusal
	}{
		{"retryable, an untyped error", true, errors.New("the quote service is busy"), 4, "loop_retry_budget"},
		{"retryable, a tool_error", true, &reach.ToolError{Type: "tool_error", Message: "503 temporarily overloaded, retry in a moment"}, 4, "loop_retry_budget"},
		{"not retryable, the message says it", false, &reach.ToolError{Type: "tool_error", Message: "503 temporarily overloaded, retry in a moment"}, 4, "loop_retry_budget"},
		{"not retryable, an HTTP 429", false, errors.New("upstream answered HTTP 429"), 4, "loop_retry_budget"},
		{"not retryable, a permanent failure", false, errors.New("the quote service is busy"), 2, "loop_repeat"},
		{"retryable, but typed permanent", true, &reach.ToolError{Type: "invalid_args", Message: "sku A-7 is not a product, try again later"}, 2, "loop_repeat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			rt := reach.New(nil)
			rt.MustRegister(reach.Tool{Name: "get_quote", Reentrancy: reach.Reentrant, Retryable: tc.retryable,
				Retry: &reach.RetryPolicy{Attempts: 1}, // one attempt per call: the model retries
				Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					runs.Add(1)
					return nil, tc.err
				}})
			res := retryTurns(t, rt, "get_quote", 6)
			if got := int(runs.Load()); got != tc.runs {
				t.Errorf("the tool ran %d times, want %d", got, tc.runs)
			}
			first := ""
			for i, r := range res {
				if r.Status == reach.StatusRefused {
					first = r.Error.Code
					if i != tc.runs {
						t.Errorf("try %d refused, want try %d", i+1, tc.runs+1)
					}
					break
				}
				if r.Status != reach.StatusError {
					t.Fatalf("try %d: %s, want a failure", i+1, r.Status)
				}
				wantType := reach.TypeTool
				if tc.refused == "loop_retry_budget" {
					wantType = reach.TypeTransient
				}
				if r.Error.Type != wantType {
					t.Errorf("try %d failed as %s (%s), want %s", i+1, r.Error.Type, r.Error.Code, wantType)
				}
			}
			if first != tc.refused {
				t.Errorf("first refusal %q, want %q", first, tc.refused)
			}
		})
	}
}

// TestRetryableErrorIsRetriedByTheExecutor: a read tool declared Retryable
// whose upstream fails once is tried again by the executor within the
// call, with its retry policy, and the call succeeds.
func TestRetryableErrorIsRetriedByTheExecutor(t *testing.T) {
	var runs atomic.Int32
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "get_quote", Retryable: true, Retry: &reach.RetryPolicy{Attempts: 3, Base: 1, Max: 1},
		Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			if runs.Add(1) == 1 {
				return nil, &reach.ToolError{Type: "tool_error", Message: "the quote service is busy"}
			}
			return json.RawMessage(`{"price":12}`), nil
		}})
	res := retryTurns(t, rt, "get_quote", 1)
	if res[0].Status != reach.StatusSuccess || runs.Load() != 2 {
		t.Errorf("call = %s after %d runs, want a success after 2", res[0].Status, runs.Load())
	}
}
