package link

import (
	"testing"

	"github.com/agentreach/reach"
)

// TaskDigest is of the whole task, trimmed, and of its principal and
// tenant: another principal's, another tenant's or another task's differs.
func TestTaskDigestScoped(t *testing.T) {
	d := TaskDigest("alice", "acme", "research the refund policy")
	if TaskDigest("alice", "acme", "  research the refund policy\n") != d {
		t.Error("the task's surrounding spaces changed its digest: Handed trims them")
	}
	for _, o := range [][3]string{{"bob", "acme", "research the refund policy"}, {"alice", "globex", "research the refund policy"},
		{"alice", "acme", "research the refund polic"}, {"aliceacme", "", "research the refund policy"}, {"alice", "acmeresearch the refund policy", ""}} {
		if TaskDigest(o[0], o[1], o[2]) == d {
			t.Errorf("TaskDigest%q is alice of acme's", o)
		}
	}
}

// TaskStrings: each string member once, trimmed, none empty or too long.
func TestTaskStrings(t *testing.T) {
	long := make([]byte, maxTask+1)
	for i := range long {
		long[i] = 'a'
	}
	got := TaskStrings([]byte(`{"a":" x ","b":"x","c":"","d":3,"e":"` + string(long) + `"}`))
	if len(got) != 1 || got[0] != "x" {
		t.Errorf("TaskStrings = %q, want [x]", got)
	}
}

// Adopt remembers the hand-off of a turn another instance ran: the
// sub-agent's first turn sent again finds it (Handed), and a second
// adoption for the same request tree gets the same hand-off.
func TestAdoptFoundAgain(t *testing.T) {
	rt := reach.New(nil)
	_, req, err := rt.Begin(t.Context(), &reach.RequestOptions{Principal: LocalPrincipal})
	if err != nil {
		t.Fatal(err)
	}
	f, err := rt.AdoptAncestry(req, []reach.Ancestor{{ID: 42, Kind: reach.AncestorKind(reach.ModelFrame), Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	var c ModelChoices
	h := c.Adopt("do it", f, "researcher", 0)
	if h == nil || h.Turn != f || h.Tool != "researcher" {
		t.Fatalf("Adopt = %+v", h)
	}
	if got := c.Handed(" do it", nil); got != h {
		t.Errorf("Handed after Adopt = %+v, want the adopted hand-off", got)
	}
	if got := c.Adopt("do it", f, "researcher", 0); got != h {
		t.Errorf("a second Adopt = %+v, want the first's hand-off", got)
	}
}
