package fault

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRefusedBegin: a store's interruption or stop becomes the refusal of
// the request it refuses, naming it; any other error stays as it is.
func TestRefusedBegin(t *testing.T) {
	e, ok := RefusedBegin(&InterruptedError{Cause: Cause{Reason: "restart"}}, "r1").(*Error)
	if !ok || e.Code != "request_interrupted" || !errors.Is(e, ErrRefused) || !strings.Contains(e.Message, "Request r1 ") {
		t.Fatalf("an interruption: %v", e)
	}
	e, ok = RefusedBegin(&StopError{Cause: Cause{Mode: Cancel, By: "bob", Request: "r0"}}, "r1").(*Error)
	if !ok || e.Code != "stopped_cancel" || !strings.Contains(e.Message, "Request r0 ") {
		t.Fatalf("a stop naming its request: %v", e)
	}
	other := errors.New("disk full")
	if RefusedBegin(other, "r1") != other {
		t.Fatal("another error was changed")
	}
}

// TestContextCause: a stop is the cause as it is; a plain cancel is a
// cancelled error of the guard that saw it.
func TestContextCause(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := &StopError{Cause: Cause{Mode: Cancel}}
	cancel(stop)
	if ContextCause(ctx, "execute") != stop {
		t.Fatal("a stop was not returned as it is")
	}
	ctx, cancel = context.WithCancelCause(context.Background())
	cancel(errors.New("client went away"))
	e, ok := ContextCause(ctx, "execute").(*Error)
	if !ok || e.Guard != "execute" || e.Code != "cancelled" || !errors.Is(e, ErrCancelled) || !strings.Contains(e.Message, "client went away") {
		t.Fatalf("a cancel: %v", e)
	}
}
