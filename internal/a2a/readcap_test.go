package a2a

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// countingRT is an embedder's transport that records the most bytes read
// of any one answer.
type countingRT struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	most int64
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil {
		resp.Body = &countedBody{ReadCloser: resp.Body, c: c}
	}
	return resp, err
}

func (c *countingRT) read() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most
}

type countedBody struct {
	io.ReadCloser
	c *countingRT
	n int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	b.c.mu.Lock()
	b.c.most = max(b.c.most, b.n)
	b.c.mu.Unlock()
	return n, err
}

// readCapHarness is a harness whose gateway talks to its agents through an
// embedder's own HTTP client (Options.HTTPClient), counting what is read.
func readCapHarness(t *testing.T, limit int64, names ...string) (*harness, *countingRT) {
	rt := &countingRT{rt: http.DefaultTransport.(*http.Transport).Clone()}
	h := newHarnessWith(t, func(o *Options) {
		o.MaxTaskBytes = limit
		o.HTTPClient = &http.Client{Transport: rt}
	}, nil, names...)
	return h, rt
}

// TestEmbedderClientIsCapped: an embedder's own Options.HTTPClient was used
// as given, with no read cap, so GetTask of a task whose view at the agent is
// 1 MiB read all of it (and any answer up to whatever the agent sent) before
// refusing it. Reach now reads at most twice MaxTaskBytes of it, whatever
// client it is given, and the embedder's client is not changed.
func TestEmbedderClientIsCapped(t *testing.T) {
	const limit = 16 << 10
	h, rt := readCapHarness(t, limit, "worker")
	given := h.g.opts.HTTPClient
	h.sendMsg("worker", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	id := h.working("worker")
	f := h.agents["worker"]
	f.mu.Lock()
	f.tasks[id].Artifacts = []*a2a.Artifact{{ID: "big", Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("z", 1<<20))}}}
	f.mu.Unlock()
	if _, err := h.client("worker", "alice", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: id}); err == nil {
		t.Fatal("GetTask relayed a task of 1 MiB, over the bound")
	}
	if n := rt.read(); n > 2*limit {
		t.Errorf("reach read %d bytes of one answer through the embedder's client, want at most %d (twice max_task_bytes)", n, 2*limit)
	}
	if _, ok := given.Transport.(capped); !ok {
		t.Errorf("the gateway's client has transport %T, want it capped", given.Transport)
	}
	if _, ok := rt.rt.(capped); ok {
		t.Error("the embedder's own transport was changed")
	}
}

// TestPolledTaskReadToItsBound: an agent that does not stream is polled
// with GetTask, and each answer was read up to 64 MiB before its size failed
// the task. Reach now reads at most twice MaxTaskBytes of each answer, fails
// the task for its size, and tells the agent to cancel it.
func TestPolledTaskReadToItsBound(t *testing.T) {
	const limit = 16 << 10
	h, rt := readCapHarness(t, limit, "poller")
	tk := h.sendMsg("poller", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("slow")), true)
	id := h.working("poller")
	f := h.agents["poller"]
	f.mu.Lock()
	f.tasks[id].Artifacts = []*a2a.Artifact{{ID: "big", Parts: a2a.ContentParts{a2a.NewTextPart(strings.Repeat("z", 1<<20))}}}
	f.mu.Unlock()
	eventually(t, "the polled task failed for its size", func() bool {
		x := h.g.tasks.get("poller", tk.ID, Owner{Principal: "alice"})
		return x != nil && x.snapshot().Status.State == a2a.TaskStateFailed
	})
	if text := statusText(h.g.tasks.get("poller", tk.ID, Owner{Principal: "alice"}).snapshot()); !strings.Contains(text, "grew over 16384 bytes") {
		t.Errorf("the failed task says %q, want its bound", text)
	}
	if n := rt.read(); n > 2*limit {
		t.Errorf("reach read %d bytes of one polled answer, want at most %d (twice max_task_bytes)", n, 2*limit)
	}
	eventually(t, "the agent told to cancel", func() bool { return len(f.canceled()) > 0 })
}

// TestCancelAnswerReadToItsBound: CancelTask's answer was read up to 64 MiB.
// An agent that confirms a cancel with a task of 2 MiB is now read to twice
// MaxTaskBytes, and its confirmation is not taken: its subtree is isolated.
func TestCancelAnswerReadToItsBound(t *testing.T) {
	const limit = 16 << 10
	h, rt := readCapHarness(t, limit, "worker")
	tk := h.sendMsg("worker", "alice", a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("bigcancel")), true)
	h.working("worker")
	if _, err := h.client("worker", "alice", false).CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: tk.ID}); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	confirmed := func() bool {
		for _, e := range h.audit.find("cancel") {
			if strings.Contains(e.Message, "confirmed the cancel") {
				return true
			}
		}
		return false
	}
	eventually(t, "the cancel's answer read", func() bool { return len(h.audit.find("isolate")) > 0 || confirmed() })
	if n := rt.read(); n > 2*limit {
		t.Errorf("reach read %d bytes of the agent's CancelTask answer, want at most %d (twice max_task_bytes)", n, 2*limit)
	}
	if confirmed() {
		t.Error("a confirmation over the bound was taken")
	}
}
