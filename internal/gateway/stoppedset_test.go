package gateway

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
)

// TestRecoveredStoppedBounded: the requests recoveries found stopped are
// remembered only while the runtime keeps them: a recovery forgets the ids
// of earlier ones the runtime no longer has (Over answers false for them
// anyway), and keeps those it has, so that a cluster where instances die
// now and then does not grow the set for ever.
func TestRecoveredStoppedBounded(t *testing.T) {
	g := newTestGateway(t, nil)
	_, req, err := g.rt.Begin(context.Background(), &reach.RequestOptions{Principal: "local"})
	if err != nil {
		t.Fatal(err)
	}
	first := []string{req.ID()}
	for i := range 1000 {
		first = append(first, fmt.Sprintf("gone-%d", i))
	}
	g.noteStopped(&durable.Report{Stopped: first})
	g.noteStopped(&durable.Report{Stopped: []string{"gone-later"}})
	var kept []string
	g.recoveredStopped.Range(func(id, _ any) bool {
		kept = append(kept, id.(string))
		return true
	})
	slices.Sort(kept)
	if want := []string{"gone-later", req.ID()}; !slices.Equal(kept, want) {
		t.Errorf("after two recoveries the set holds %d ids (%q…), want %q", len(kept), kept[:min(3, len(kept))], want)
	}
}
