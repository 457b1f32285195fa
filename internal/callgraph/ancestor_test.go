package callgraph

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/frames"
)

// TestAncestorRoundTrip: an ancestor's kind is written by name, and its
// mark comes back as written, adopted; a bad hash or kind is an error.
func TestAncestorRoundTrip(t *testing.T) {
	var m Mark
	m.Tool("acct", []byte(`{"id":7}`), Keyed, []string{"id"})
	m.Seal(NameHash("acct"))
	a := Ancestor{ID: 9, Kind: AncestorKind(frames.Delegate), Name: "acct"}
	a.SetMark(&m)
	b, err := json.Marshal(a)
	if err != nil || !strings.Contains(string(b), `"kind":"delegate"`) {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var back Ancestor
	if err := json.Unmarshal(b, &back); err != nil || back.Kind != AncestorKind(frames.Delegate) {
		t.Fatalf("Unmarshal = %+v, %v", back, err)
	}
	got, err := back.Mark()
	if err != nil || got.Hash != m.Hash || got.Keyed != m.Keyed || got.Filter != m.Filter || !got.Adopted {
		t.Fatalf("Mark() = %+v, %v; want %+v, adopted", got, err, m)
	}
	if _, err := (&Ancestor{Hash: "xyz"}).Mark(); err == nil {
		t.Error("a hash that is not hex was read")
	}
	if err := json.Unmarshal([]byte(`{"kind":"agent"}`), &back); err == nil {
		t.Error(`kind "agent" was read`)
	}
}
