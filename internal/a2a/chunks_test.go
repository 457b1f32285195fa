package a2a

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentreach/reach/internal/redact"
)

// TestChunksOfADroppedEvent: an artifact chunk the task does not take (it
// names another task, or came after the task ended) keeps nothing held for
// it: the end held of another task's chunks was passed on as this task's
// at its end, and an agent that streamed on after the end, each chunk of a
// new artifact, grew the task by one held stream a chunk for as long as it
// went on.
func TestChunksOfADroppedEvent(t *testing.T) {
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := red.Add("sk-model-KEY-0123456789"); err != nil {
		t.Fatal(err)
	}
	tk := workingTask(t, Options{Redactor: red})
	chunk := func(task a2a.TaskID, i int) *a2a.TaskArtifactUpdateEvent {
		return &a2a.TaskArtifactUpdateEvent{TaskID: task, ContextID: tk.ctxID, Append: true,
			Artifact: &a2a.Artifact{ID: a2a.ArtifactID(fmt.Sprint("art-", i)), Parts: a2a.ContentParts{a2a.NewTextPart("the key is sk-")}}}
	}
	for i := range 100 {
		tk.apply(chunk("another-task", i))
	}
	tk.apply(&a2a.TaskStatusUpdateEvent{TaskID: tk.id, ContextID: tk.ctxID, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}})
	for i := range 100 {
		tk.apply(chunk(tk.id, i))
	}
	tk.mu.Lock()
	held := len(tk.chunks)
	var taken []string
	for _, ev := range tk.feed {
		if e, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			taken = append(taken, string(e.Artifact.ID))
		}
	}
	tk.mu.Unlock()
	if held != 0 {
		t.Errorf("%d streams held for chunks the task did not take, want 0", held)
	}
	if len(taken) != 0 {
		t.Errorf("the task passed on %d chunks of artifacts it did not take (%v), want none", len(taken), taken[:min(3, len(taken))])
	}
}

// TestAppendedChunksGrowInPlace: an artifact streamed in many appended
// chunks grows by what each brings, not by a copy of all its parts each
// chunk (quadratic: 20,000 chunks took seconds); an artifact handed out
// before a chunk keeps the parts it had.
func TestAppendedChunksGrowInPlace(t *testing.T) {
	const n = 8000
	evs := make([]*a2a.TaskArtifactUpdateEvent, n)
	for i := range evs {
		evs[i] = &a2a.TaskArtifactUpdateEvent{Append: i > 0, Artifact: &a2a.Artifact{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart(fmt.Sprint(i))}}}
	}
	tk, x := &a2a.Task{}, &artIndex{}
	addArtifact(tk, x, evs[0])
	early := tk.Artifacts[0]
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, e := range evs[1:] {
		addArtifact(tk, x, e)
	}
	runtime.ReadMemStats(&after)
	// A copy each chunk allocates about 8 bytes × n²/2 (256 MB); growing
	// in place, a few times 8 bytes × n and an artifact a chunk.
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("%d appended chunks allocated %d MB", n, got>>20)
	}
	parts := tk.Artifacts[0].Parts
	if len(parts) != n || len(early.Parts) != 1 {
		t.Fatalf("%d parts, the artifact before the chunks %d; want %d and 1", len(parts), len(early.Parts), n)
	}
	for i, p := range parts {
		if p.Content != a2a.Text(fmt.Sprint(i)) {
			t.Fatalf("part %d is %v", i, p.Content)
		}
	}
	// An artifact replaced, then appended to: the event that replaced it
	// keeps its parts.
	repl := &a2a.TaskArtifactUpdateEvent{Artifact: &a2a.Artifact{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart("new")}}}
	addArtifact(tk, x, repl)
	addArtifact(tk, x, &a2a.TaskArtifactUpdateEvent{Append: true, Artifact: &a2a.Artifact{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart("more")}}})
	if len(repl.Artifact.Parts) != 1 || len(tk.Artifacts[0].Parts) != 2 {
		t.Errorf("the replacing event's parts %d, the artifact's %d; want 1 and 2", len(repl.Artifact.Parts), len(tk.Artifacts[0].Parts))
	}
}

// TestEmptyArtifactsCount: artifacts with no parts, each of a new id, count
// towards the bytes a task holds (MaxTaskBytes), as empty parts and
// messages do: each counted nothing, and an agent that streamed them
// without end had reach keep every one.
func TestEmptyArtifactsCount(t *testing.T) {
	tk, x := &a2a.Task{}, &artIndex{}
	var held int64
	const n = 1000
	for i := range n {
		held += addArtifact(tk, x, &a2a.TaskArtifactUpdateEvent{Artifact: &a2a.Artifact{ID: a2a.ArtifactID(fmt.Sprint("art-", i))}})
	}
	if len(tk.Artifacts) != n || held < n*artifactOverhead {
		t.Fatalf("%d empty artifacts held %d bytes (%d kept); want at least %d", n, held, len(tk.Artifacts), n*artifactOverhead)
	}
	// Replaced by itself, an artifact counts the same.
	if d := addArtifact(tk, x, &a2a.TaskArtifactUpdateEvent{Artifact: &a2a.Artifact{ID: "art-7"}}); d != 0 {
		t.Errorf("an artifact replaced by the same grew the task by %d", d)
	}
}
