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
	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/idempotency"
)

// failingCheckpoints is a checkpoint store whose "executing" records fail
// with err.
type failingCheckpoints struct{ err error }

func (f failingCheckpoints) Executing(context.Context, *reach.Checkpoint) error { return f.err }
func (failingCheckpoints) Ended(context.Context, *reach.Checkpoint)             {}

// failingClaims is an idempotency store whose claims fail with err.
type failingClaims struct{ err error }

func (f failingClaims) Claim(context.Context, *reach.IdemClaim) (*reach.Result, bool, error) {
	return nil, false, f.err
}
func (failingClaims) Complete(string, *reach.Result) {}

// TestIdempotencyRefusalTellsNoStoreText: a write refused because its
// idempotency claim could not be recorded (idempotency_store), its record
// does not decode (idempotency_record_unreadable), or its "executing"
// checkpoint could not be written (checkpoint_failed), tells the model
// what happened and what to do, not the store's or the decoder's own text
// (a path, a driver's words, the value it could not read), which the log
// has with the request and the call; what an operator must do, when the
// store said (a full disk: free space), it tells. Before, the refusal
// quoted the store's text.
func TestIdempotencyRefusalTellsNoStoreText(t *testing.T) {
	const hint = "the data folder's disk is full: free space on it"
	full := &fault.Hinted{Err: errors.New("database or disk is full: /srv/reach/data/reach.db-wal"), Hint: hint}
	for _, tt := range []struct {
		name, code string
		claims     reach.IdempotencyStore
		cp         reach.Checkpointer
		hint       bool
	}{
		{"claim", "idempotency_store", failingClaims{errors.New("disk I/O error: /srv/reach/data/reach.db-wal")}, nil, false},
		{"claim on a full disk", "idempotency_store", failingClaims{full}, nil, true},
		{"record", "idempotency_record_unreadable", failingClaims{fmt.Errorf("%w: invalid character 'x' looking for beginning of value in /srv/reach/data/reach.db-wal", idempotency.ErrBadRecord)}, nil, false},
		{"checkpoint", "checkpoint_failed", nil, failingCheckpoints{errors.New("disk I/O error: /srv/reach/data/reach.db-wal")}, false},
		{"checkpoint on a full disk", "checkpoint_failed", nil, failingCheckpoints{full}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			rt := reach.New(&reach.Options{Idempotency: tt.claims, Checkpoints: tt.cp, Logger: slog.New(slog.NewTextHandler(&log, nil))})
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
			if strings.Contains(told, hint) != tt.hint {
				t.Errorf("the refusal %q: tells what an operator must do %v, want %v", told, !tt.hint, tt.hint)
			}
			if l := log.String(); !strings.Contains(l, "/srv/reach") || !strings.Contains(l, "request="+req.ID()) || !strings.Contains(l, "call=p1") {
				t.Errorf("log %q: want the store's error with the request and the call", l)
			}
		})
	}
}
