package a2a

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestCardRefreshed: an agent that changes its card (its description,
// and that it no longer streams) is seen to, once the card reach has is
// older than Options.CardTTL: the card reach serves says so, and a new
// task goes through the client made from the new card. Reach fetched the
// card once and kept it until it restarted.
func TestCardRefreshed(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) { o.CardTTL = 50 * time.Millisecond }, nil, "executor")
	desc := func() string {
		resp, err := http.Get(h.srv.URL + "/a2a/executor/.well-known/agent-card.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c struct{ Description string }
		json.NewDecoder(resp.Body).Decode(&c)
		return c.Description
	}
	if d := desc(); d != "fake executor" {
		t.Fatalf("card: %q", d)
	}
	if tk := h.send("executor", "alice", "say hi", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("first task: %s", tk.Status.State)
	}
	h.agents["executor"].setCard(func(c *a2a.AgentCard) {
		c.Description = "fake executor, version 2"
		c.Capabilities.Streaming = false
	})
	eventually(t, "reach to serve the new card", func() bool { return desc() == "fake executor, version 2" })
	if tk := h.send("executor", "alice", "say again", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Errorf("a task after the change: %s %q", tk.Status.State, statusText(tk))
	}
}

// A refresh that finds the card as it was keeps the client: a new client
// each CardTTL would pile up, never destroyed (tasks in flight may hold
// the one a changed card replaces).
func TestCardRefreshedSameKeepsClient(t *testing.T) {
	h := newHarnessWith(t, func(o *Options) { o.CardTTL = time.Millisecond }, nil, "executor")
	if tk := h.send("executor", "alice", "say hi", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("first task: %s", tk.Status.State)
	}
	ag := h.g.agents["executor"]
	ag.mu.Lock()
	first := ag.client
	ag.mu.Unlock()
	for i := range 3 {
		time.Sleep(5 * time.Millisecond)
		if err := ag.resolve(t.Context()); err != nil {
			t.Fatalf("refresh %d: %v", i, err)
		}
	}
	ag.mu.Lock()
	kept := ag.client == first
	ag.mu.Unlock()
	if !kept {
		t.Error("a refresh of an unchanged card replaced the agent's client; want it kept")
	}
	if tk := h.send("executor", "alice", "say again", nil); tk.Status.State != a2a.TaskStateCompleted {
		t.Errorf("a task after the refreshes: %s %q", tk.Status.State, statusText(tk))
	}
}
