package a2a

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestArtIndexAgreesWithScan: artifacts added through the index (new ids,
// ids seen before, appended chunks, replacements), across views the task
// replaces and artifacts let go, end as the scan leaves them: the same
// artifacts, in the same order, each with the same parts, and the same
// bytes counted.
func TestArtIndexAgreesWithScan(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 23))
		scanned, indexed, x := &a2a.Task{}, &a2a.Task{}, &artIndex{}
		var heldS, heldI int64
		most := 0 // the most artifacts held: past artScan, the index is used
		for step := range 3000 {
			switch k := r.IntN(100); {
			case k < 2: // a new view of the agent's: its artifacts as they stand
				scanned = &a2a.Task{Artifacts: append([]*a2a.Artifact(nil), scanned.Artifacts...)}
				indexed = &a2a.Task{Artifacts: append([]*a2a.Artifact(nil), indexed.Artifacts...)}
			case k < 3: // let go (overflow)
				scanned.Artifacts, indexed.Artifacts = nil, nil
			default:
				id := a2a.ArtifactID(fmt.Sprint("art-", r.IntN(step/2+1)))
				appendTo := r.IntN(3) == 0
				part := fmt.Sprint(step)
				ev := func() *a2a.TaskArtifactUpdateEvent {
					return &a2a.TaskArtifactUpdateEvent{Append: appendTo, Artifact: &a2a.Artifact{ID: id, Parts: a2a.ContentParts{a2a.NewTextPart(part)}}}
				}
				heldS += addArtifact(scanned, nil, ev())
				heldI += addArtifact(indexed, x, ev())
				most = max(most, len(indexed.Artifacts))
			}
		}
		if heldS != heldI || len(scanned.Artifacts) != len(indexed.Artifacts) {
			t.Fatalf("seed %d: scanned %d artifacts (%d bytes), indexed %d (%d bytes)", seed, len(scanned.Artifacts), heldS, len(indexed.Artifacts), heldI)
		}
		if most <= 4*artScan {
			t.Fatalf("seed %d: at most %d artifacts, too few to try the index", seed, most)
		}
		for i, a := range scanned.Artifacts {
			b := indexed.Artifacts[i]
			if a.ID != b.ID || textOf(a.Parts) != textOf(b.Parts) {
				t.Fatalf("seed %d: artifact %d is %s %q scanned, %s %q indexed", seed, i, a.ID, textOf(a.Parts), b.ID, textOf(b.Parts))
			}
		}
	}
}

// BenchmarkNewArtifactIDs: an agent streaming 32,000 artifacts, each of a
// new id (about what the default MaxTaskBytes keeps of empty ones): each
// looked for among those before it by a scan (reach before artIndex), or
// by the index.
func BenchmarkNewArtifactIDs(b *testing.B) {
	const n = 32000
	evs := make([]*a2a.TaskArtifactUpdateEvent, n)
	for i := range evs {
		evs[i] = &a2a.TaskArtifactUpdateEvent{Artifact: &a2a.Artifact{ID: a2a.ArtifactID(fmt.Sprintf("artifact-%08d", i))}}
	}
	for _, c := range []struct {
		name  string
		index bool
	}{{"scan", false}, {"index", true}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				tk := &a2a.Task{}
				var x *artIndex
				if c.index {
					x = &artIndex{}
				}
				for _, e := range evs {
					addArtifact(tk, x, e)
				}
				if len(tk.Artifacts) != n {
					b.Fatalf("%d artifacts kept, want %d", len(tk.Artifacts), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/artifact")
		})
	}
}
