package modelproxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/store"
)

// managerModel answers a turn whose last message is "manage" with one
// tool call for each of tools, each given the task "same task"; any other
// turn with a text answer of 10 and 5 tokens. A sub-agent's first turn
// waits at gate before it is answered.
type managerModel struct {
	tools []string
	gate  chan struct{}
}

func (m *managerModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	if strings.Contains(string(b), `"manage"`) {
		var calls []map[string]any
		for i, t := range m.tools {
			calls = append(calls, map[string]any{"id": "call_" + string(rune('a'+i)), "type": "function",
				"function": map[string]any{"name": t, "arguments": `{"input":"same task"}`}})
		}
		out, _ := json.Marshal(map[string]any{"id": "c0", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}, "finish_reason": "tool_calls"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
		w.Write(out)
		return
	}
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-r.Context().Done():
			return
		}
	}
	io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
}

// firstTurnsAtOnce runs a manager's turn that hands "same task" to tools
// (one call each), then sends n sub-agents' first turns of that task at
// once (each with a system message of its own, as two agents' are), and
// returns the manager's request.
func firstTurnsAtOnce(t *testing.T, tools []string, n int) (*reach.Runtime, *reach.Request) {
	t.Helper()
	m := &managerModel{tools: tools, gate: make(chan struct{})}
	up := httptest.NewServer(m)
	t.Cleanup(up.Close)
	rt := reach.New(nil)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Delegator: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: &reach.Budget{Turns: 10, Tokens: 100000}})})
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	post := func(body string) int {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(`{"model":"m","messages":[{"role":"user","content":"manage"}],"tools":[{"type":"function","function":{"name":"researcher","parameters":{"type":"object"}}}]}`); s != 200 {
		t.Fatalf("the manager's turn: %d", s)
	}
	var root *reach.Request
	for _, r := range rt.Requests() {
		if r.Parent() == nil {
			root = r
		}
	}
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			statuses[i] = post(`{"model":"m","messages":[{"role":"system","content":"You are agent ` + string(rune('A'+i)) + `."},{"role":"user","content":"same task"}]}`)
		})
	}
	// Every first turn is placed (its model frame begun) before any is
	// answered: they run at once.
	deadline := time.Now().Add(10 * time.Second)
	for begun := 0; begun < n && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		begun = 0
		for _, r := range rt.Requests() {
			for _, f := range r.Frames() {
				if f.Kind == reach.ModelFrame && r != root {
					begun++
				}
			}
		}
	}
	close(m.gate)
	wg.Wait()
	for _, s := range statuses {
		if s != 200 {
			t.Fatalf("the first turns were answered %v, want 200 each", statuses)
		}
	}
	return rt, root
}

// subTurns is how many model turns each sub-request of root holds, and
// the names of their agents.
func subTurns(root *reach.Request) (turns []int, agents []string) {
	for _, c := range root.Children() {
		n := 0
		for _, f := range c.Frames() {
			if f.Kind == reach.ModelFrame {
				n++
			}
		}
		turns, agents = append(turns, n), append(agents, c.Agent())
	}
	return turns, agents
}

// TestFirstTurnsAtOnce34: two sub-agents a manager's turn ran in parallel
// (two tool calls handing the same task, as an orchestrator that asks two
// agents the same question) send their first turns at once, alike but for
// their system prompts. Each runs in a sub-request of its own under the
// manager's turn, one turn each, each carved once from the manager's
// budget, and both turns counted on the manager's request. Which call
// each first turn belongs to cannot be told from the task: neither
// sub-request takes a tool's name the other call had as well.
func TestFirstTurnsAtOnce34(t *testing.T) {
	t.Run("two calls", func(t *testing.T) {
		_, root := firstTurnsAtOnce(t, []string{"researcher", "critic"}, 2)
		turns, agents := subTurns(root)
		if len(turns) != 2 || turns[0] != 1 || turns[1] != 1 {
			t.Fatalf("the manager's request has sub-requests with %v turns, want two with one each", turns)
		}
		for _, a := range agents {
			if a != "sub-agent" {
				t.Errorf("sub-request agents %v: the first turns' task was handed to researcher and to critic alike, so neither name is known; want sub-agent for both", agents)
				break
			}
		}
		for _, c := range root.Children() {
			if d := c.DelegateFrame(); d == nil || d.Parent == nil || d.Parent.Kind != reach.ModelFrame {
				t.Errorf("sub-request %s is not delegated under the manager's turn", c.ID())
			}
			// Carved from what the manager's request had left as it began:
			// 9 turns, or 8 once the other sub-agent's turn was counted.
			if b := c.Budget(); b.Turns < 8 || b.Turns > 9 {
				t.Errorf("sub-request %s was carved %d turns, want what its manager had left (8 or 9)", c.ID(), b.Turns)
			}
		}
		if u := root.Usage().Turns; u != 3 {
			t.Errorf("the manager's request counts %d turns, want 3: its own and each sub-agent's", u)
		}
	})

	t.Run("one call, its first turn sent twice", func(t *testing.T) {
		_, root := firstTurnsAtOnce(t, []string{"researcher"}, 2)
		turns, agents := subTurns(root)
		if len(turns) != 1 || turns[0] != 2 {
			t.Fatalf("the manager's request has sub-requests with %v turns, want one with both turns: one call began one sub-agent", turns)
		}
		if agents[0] != "researcher" {
			t.Errorf("the sub-request goes by %q, want researcher", agents[0])
		}
	})
}

// putTasks is a store of handed tasks that keeps what each digest was
// last written with, as the store's upsert of (digest, request) does, and
// finds none (a first turn is then linked by the instance's memory).
type putTasks struct {
	mu   sync.Mutex
	last map[string]*store.HandedTask
}

func (s *putTasks) PutHandedTasks(_ context.Context, ts []*store.HandedTask, _ int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = map[string]*store.HandedTask{}
	}
	for _, t := range ts {
		c := *t
		s.last[t.Digest+"/"+t.Request] = &c
	}
	return nil
}

func (s *putTasks) HandedTasks(context.Context, string, string, string, time.Time) ([]*store.HandedTask, error) {
	return nil, nil
}

func (s *putTasks) ClaimHandedTask(context.Context, string, string, string, time.Time) (*store.HandedTask, error) {
	return nil, nil
}

func (s *putTasks) SetHandedSub(context.Context, string, string, int, string, string) (bool, error) {
	return false, nil
}

func (s *putTasks) HandedSubs(context.Context, string, string) ([]string, error) { return nil, nil }

// TestHandedTaskOfTwoFunctionsStoredNameless34: on several instances, the
// record of a task a turn handed to two functions (its calls to
// researcher and critic given the same string) names neither, as this
// instance's memory does not (Handed): the instance that adopts the turn
// for a sub-agent's first turn cannot tell which call it belongs to.
// Before, the record kept the last call's function, and a sub-agent whose
// first turn reached another instance went by it, maybe the other's.
func TestHandedTaskOfTwoFunctionsStoredNameless34(t *testing.T) {
	for _, c := range []struct {
		tools []string
		want  string
	}{
		{[]string{"researcher", "critic"}, ""},
		{[]string{"researcher", "researcher"}, "researcher"},
		{[]string{"researcher"}, "researcher"},
	} {
		t.Run(strings.Join(c.tools, ","), func(t *testing.T) {
			up := httptest.NewServer(&managerModel{tools: c.tools})
			defer up.Close()
			rt := reach.New(nil)
			tasks := &putTasks{}
			p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Delegator: rt,
				Tasks: tasks, Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{})})
			srv := httptest.NewServer(p)
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"manage"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			tasks.mu.Lock()
			defer tasks.mu.Unlock()
			if len(tasks.last) != 1 {
				t.Fatalf("%d records of the task, want 1", len(tasks.last))
			}
			for _, r := range tasks.last {
				if r.Tool != c.want {
					t.Errorf("the task's record names %q, want %q", r.Tool, c.want)
				}
			}
		})
	}
}

// TestTopFirstTurnsAtOnce34: two conversations of one principal that
// begin alike at once, with no turn that handed their task (two runs of
// one agent, side by side), are two requests, each with its own budget
// and its one turn: neither joins the other, as a first turn sent again
// for a handed task does.
func TestTopFirstTurnsAtOnce34(t *testing.T) {
	m := &managerModel{gate: make(chan struct{})}
	close(m.gate)
	up := httptest.NewServer(m)
	defer up.Close()
	rt := reach.New(nil)
	p := New(&Options{Model: &config.ModelConfig{BaseURL: up.URL + "/v1", Name: "m"}, Choices: &link.ModelChoices{}, Models: rt, Breakers: rt, Delegator: rt,
		Owned: link.NewOwned(context.Background(), rt, time.Minute, link.Budgets{Default: &reach.Budget{Turns: 10}})})
	srv := httptest.NewServer(p)
	defer srv.Close()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"same task"}]}`))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	rs := rt.Requests()
	if len(rs) != 2 {
		t.Fatalf("%d requests, want 2", len(rs))
	}
	for _, r := range rs {
		if r.Parent() != nil || r.Usage().Turns != 1 || r.Budget().Turns != 10 {
			t.Errorf("request %s: parent %v, %d turns of a budget of %d; want a root with its own budget and one turn", r.ID(), r.Parent(), r.Usage().Turns, r.Budget().Turns)
		}
	}
}
