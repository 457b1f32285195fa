package frames

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestStateNames(t *testing.T) {
	for s := Selected; s <= Cancelled; s++ {
		b, _ := s.MarshalText()
		var back State
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Fatalf("%s read back as %v, %v", b, back, err)
		}
		if s.Done() != (s >= Completed) {
			t.Fatalf("%s: Done = %v", s, s.Done())
		}
	}
	if AwaitingApproval.String() != "awaiting_approval" || State(42).String() != "unknown" {
		t.Fatalf("names: %s, %s", AwaitingApproval, State(42))
	}
	var s State
	if err := s.UnmarshalText([]byte("sleeping")); err == nil || !strings.Contains(err.Error(), `"sleeping"`) {
		t.Fatalf("UnmarshalText(sleeping) = %v", err)
	}
}

func TestIDText(t *testing.T) {
	id := ID(0x00ab_cdef_0123_4567)
	if id.String() != "00abcdef01234567" {
		t.Fatalf("String = %s, want 16 hex digits with leading zeros", id)
	}
	out, _ := json.Marshal(map[string]ID{"id": id})
	var back map[string]ID
	if err := json.Unmarshal(out, &back); err != nil || back["id"] != id {
		t.Fatalf("%s read back as %v, %v", out, back, err)
	}
	if _, err := Parse("not hex"); err == nil {
		t.Fatal("Parse(not hex) succeeded")
	}
	if Tool.String() != "tool" || Model.String() != "model" || Delegate.String() != "delegate" {
		t.Fatal("kind names")
	}
}
