package idempotency

import (
	"errors"
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
	u := Unreadable(errors.New("disk full"))
	if u.Type != fault.TypeTransient || u.Message != "The idempotency record of this call could not be read: disk full." {
		t.Fatalf("unreadable: %+v", u)
	}
}
