package loops

import (
	"strings"
	"testing"
)

// The refusal of two agents setting one thing back and forth names the
// two, also when each set it both ways in its turn (its last two writes
// one agent's): it named that agent twice, "tier1 and tier1".
func TestFlipNamesBothAgents(t *testing.T) {
	w := asRunOf("flip-pairs", "support", false).acc("write", "assign_conversation")
	a, b := s19As(w, "tier1"), s19As(w, "billing")
	set := func(x *asw, to, note string) {
		x.t("", asOK("assign_conversation", obj{"conversation_id": "215469873", "assignee_id": to, "body": note}, obj{"id": "215469873", "team_assignee_id": to}))
	}
	for r, x := range []*asw{a, b, a, b} {
		set(x, "team_billing", "Over to billing, round "+string(rune('a'+r))+".")
		set(x, "team_tier1", "Back to tier 1, round "+string(rune('a'+r))+".")
	}
	p := playAs(w.run)
	if p.refusedAt < 0 || p.v.Detector != "short_cycle" {
		t.Fatalf("refused at %d (%v), want short_cycle", p.refusedAt, p.v)
	}
	if m := p.v.Message; !strings.HasPrefix(m, "tier1 and billing ") && !strings.HasPrefix(m, "billing and tier1 ") {
		t.Errorf("the refusal names %q, want both agents", m[:min(len(m), 40)])
	}
}
