package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/fault"
)

func TestRefusals(t *testing.T) {
	e := InUse("pay", 2)
	if e.Code != "idempotency_key_in_use" || !strings.Contains(e.Message, "the pay call running on your call stack at depth 2") || !errors.Is(e, fault.ErrRefused) {
		t.Fatalf("in use: %+v", e)
	}
	derived := Reused(&Call{ID: "c1", Root: "r1", Tool: "pay", Key: "r1/c1"})
	if derived.Code != "idempotency_key_reused" || !strings.Contains(derived.Message, `Call id "c1" was already used in request r1 for a pay call`) ||
		!strings.Contains(derived.Suggestion, "its own call id") {
		t.Fatalf("a derived key: %+v", derived)
	}
	own := Reused(&Call{ID: "c1", Root: "r1", Tool: "pay", Key: "k-9", Own: true})
	if own.Message != `The idempotency key "k-9" was already used for a pay call with other arguments.` || !strings.Contains(own.Suggestion, "a new idempotency key") {
		t.Fatalf("the caller's key: %+v", own)
	}
	// A claim the store did not take says so, not that a record could
	// not be read, and what to send again; not the store's own text,
	// which its caller logs.
	u := Unreadable(errors.New("write /srv/reach/reach.db: no space left on device"))
	if u.Type != fault.TypeTransient || strings.Contains(u.Message, "could not be read") ||
		!strings.Contains(u.Message, "could not record this call's idempotency claim") || !strings.Contains(u.Message, "was not run.") ||
		strings.Contains(u.Message+u.Suggestion, "no space left") ||
		!strings.Contains(u.Suggestion, "same idempotency key") || strings.Contains(u.Suggestion, "in a moment") {
		t.Fatalf("a claim not taken: %+v", u)
	}
	slow := Unreadable(fmt.Errorf("claiming idempotency key %q: %w", "k", context.DeadlineExceeded))
	if !strings.Contains(slow.Message, "did not answer in time") {
		t.Fatalf("a claim the store did not answer: %+v", slow)
	}
}
