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
	m.Endpoint = HashString("http://agents.example")
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
	if err != nil || got.Hash != m.Hash || got.Keyed != m.Keyed || got.Endpoint != m.Endpoint || got.Filter != m.Filter || !got.Adopted {
		t.Fatalf("Mark() = %+v, %v; want %+v, adopted", got, err, m)
	}
	if _, err := (&Ancestor{Hash: "xyz"}).Mark(); err == nil {
		t.Error("a hash that is not hex was read")
	}
	if err := json.Unmarshal([]byte(`{"kind":"agent"}`), &back); err == nil {
		t.Error(`kind "agent" was read`)
	}
}

// TestCore37NormEndpoint: one endpoint spelled two ways is one; two are two.
func TestCore37NormEndpoint(t *testing.T) {
	for _, same := range [][2]string{
		{"HTTP://Agents.Example:80/a/", "http://agents.example/a"},
		{"https://agents.example:443", "https://agents.example/"},
		{"http://[::1]:80/a", "http://[::1]/a"},
		{" http://u:p@agents.example/a#x ", "http://agents.example/a"},
		{"not a url", "not a url"},
	} {
		if a, b := NormEndpoint(same[0]), NormEndpoint(same[1]); a != b {
			t.Errorf("NormEndpoint(%q) = %q, NormEndpoint(%q) = %q: want one", same[0], a, same[1], b)
		}
	}
	for _, two := range [][2]string{
		{"http://agents.example/a", "http://agents.example/b"},
		{"http://agents.example:8080/a", "http://agents.example/a"},
		{"https://agents.example:80/a", "http://agents.example/a"},
		{"http://agents.example/a?x=1", "http://agents.example/a?x=2"},
	} {
		if a, b := NormEndpoint(two[0]), NormEndpoint(two[1]); a == b {
			t.Errorf("NormEndpoint(%q) = NormEndpoint(%q) = %q: want two", two[0], two[1], a)
		}
	}
}
