package reach_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/idempotency"
)

// failingClaims is an idempotency store whose claims fail with err.
type failingClaims struct{ err error }

func (f failingClaims) Claim(context.Context, *reach.IdemClaim) (*reach.Result, bool, error) {
	return nil, false, f.err
}
func (failingClaims) Complete(string, *reach.Result) {}

// TestIdempotencyRefusalTellsNoStoreText: a write refused because its
// idempotency claim could not be recorded (idempotency_store), or its
// record does not decode (idempotency_record_unreadable), tells the model
// what happened and what to do, not the store's or the decoder's own text
// (a path, a driver's words, the value it could not read), which the log
// has with the request and the call. Before, the refusal quoted it.
func TestIdempotencyRefusalTellsNoStoreText(t *testing.T) {
	for _, tt := range []struct {
		code string
		err  error
	}{
		{"idempotency_store", errors.New("disk I/O error: /srv/reach/data/reach.db-wal")},
		{"idempotency_record_unreadable", fmt.Errorf("%w: invalid character 'x' looking for beginning of value in /srv/reach/data/reach.db-wal", idempotency.ErrBadRecord)},
	} {
		t.Run(tt.code, func(t *testing.T) {
			var log bytes.Buffer
			rt := reach.New(&reach.Options{Idempotency: failingClaims{tt.err}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			rt.MustRegister(reach.Tool{Name: "pay", Access: reach.Write, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				t.Error("the write ran")
				return nil, nil
			}})
			ctx, req := begin(t, rt, nil)
			res := rt.Call(ctx, &reach.Call{ID: "p1", Tool: "pay", Arguments: json.RawMessage(`{}`)})
			if res.Status != reach.StatusRefused || res.Error == nil || res.Error.Code != tt.code {
				t.Fatalf("result %s %+v, want refused %s", res.Status, res.Error, tt.code)
			}
			told := res.Error.Message + " " + res.Error.Suggestion
			for _, s := range []string{"/srv/reach", "disk I/O", "invalid character"} {
				if strings.Contains(told, s) {
					t.Errorf("the refusal %q tells the store's %q", told, s)
				}
			}
			if !strings.Contains(told, "Nothing ran") {
				t.Errorf("the refusal %q: want what happened and what to do", told)
			}
			if l := log.String(); !strings.Contains(l, "/srv/reach") || !strings.Contains(l, "request="+req.ID()) || !strings.Contains(l, "call=p1") {
				t.Errorf("log %q: want the store's error with the request and the call", l)
			}
		})
	}
}
