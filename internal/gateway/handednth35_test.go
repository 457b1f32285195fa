package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agentreach/reach/internal/config"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/pgtest"
)

// twiceModel is a scripted model whose turn for a conversation beginning
// "twice X" calls the function of the request's first tool twice, both
// with the task X (two sub-agents asked the same thing by one turn), and
// answers any other conversation in text.
type twiceModel struct{}

func (twiceModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) == 0 {
		http.Error(w, "bad request", 400)
		return
	}
	msg := map[string]any{"role": "assistant", "content": "done"}
	finish := "stop"
	if task, ok := strings.CutPrefix(body.Messages[0].Content, "twice "); ok && len(body.Messages) == 1 && len(body.Tools) > 0 {
		args, _ := json.Marshal(map[string]string{"task": task})
		var calls []any
		for i := range 2 {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
				"function": map[string]any{"name": body.Tools[0].Function.Name, "arguments": string(args)}})
		}
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "scripted",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

// TestHanded35TwoCallsOneTaskAcrossInstances: a manager's turn on a that
// calls its sub-agent tool twice with the same task (two sub-agents asked
// the same thing at once) has two sub-agents, whose first turns reach b:
// each runs in a sub-request of its own carved from the manager's
// request, as on one instance (each call is a choice of its own). Before,
// the store kept one record of the task for the turn (its digest and
// request), so the second sub-agent claimed the record the first had
// begun its sub-request from and joined it: two agents' turns in one
// sub-request, sharing one budget share and one graph.
func TestHanded35TwoCallsOneTaskAcrossInstances(t *testing.T) {
	url := pgtest.Database(t)
	ms := httptest.NewServer(twiceModel{})
	t.Cleanup(ms.Close)
	var shops [2]*shop
	for i, name := range []string{"a", "b"} {
		cfg, err := config.Parse([]byte(fmt.Sprintf("store: %s\ninstance: %s\ninstance_ttl: 2s\nmodel: {base_url: '%s/v1', name: scripted, subagent_budget: sub}\nbudgets:\n  default: {tokens: 50000}\n  sub: {tokens: 20000}\n",
			url, name, ms.URL)), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		g := newTestGateway(t, cfg)
		shops[i] = &shop{g: g, url: serveTest(t, g).URL, modelURL: ms.URL}
	}
	a, b := shops[0], shops[1]
	// Where the balancer sends the two sub-agents' first turns.
	for _, on := range [][2]*shop{{b, b}, {a, a}, {b, a}} {
		name := func(s *shop) string { return map[*shop]string{a: "a", b: "b"}[s] }
		task := fmt.Sprintf("compare the budgets on %s then %s", name(on[0]), name(on[1]))
		code, r1, tc := turnOn(t, a, []map[string]any{{"role": "user", "content": "twice " + task}}, "researcher")
		if code != 200 || tc[1] != "researcher" || r1 == "" {
			t.Fatalf("the manager's turn on a: %d %s %v", code, r1, tc)
		}
		first := []map[string]any{{"role": "user", "content": task}}
		var subs [2]string
		for i, s := range on {
			code, sub, _ := turnOn(t, s, first, "lookup")
			if code != 200 || sub == "" || sub == r1 || storedParent(t, s.g, sub) != r1 {
				t.Fatalf("%s: sub-agent %d's first turn on %s: %d in %s, want a sub-request of %s", task, i+1, name(s), code, sub, r1)
			}
			subs[i] = sub
		}
		if subs[0] == subs[1] {
			t.Fatalf("%s: both sub-agents' first turns ran in one sub-request %s; want one each (the manager's turn made two calls)", task, subs[0])
		}
	}
	// At once, one on each instance: each its own call's record (the
	// claims seldom overlap here; TestPostgresHandedCallsClaimedAtOnce
	// makes them, for the claim's lock).
	for round := range 3 {
		task := fmt.Sprintf("compare the budgets at once, round %d", round)
		code, r1, tc := turnOn(t, a, []map[string]any{{"role": "user", "content": "twice " + task}}, "researcher")
		if code != 200 || tc[1] != "researcher" || r1 == "" {
			t.Fatalf("the manager's turn on a: %d %s %v", code, r1, tc)
		}
		body, _ := json.Marshal(map[string]any{"model": "scripted", "messages": []any{map[string]any{"role": "user", "content": task}}})
		var subs [2]string
		var codes [2]int
		var wg sync.WaitGroup
		for i, s := range []*shop{a, b} {
			wg.Go(func() {
				resp, err := http.Post(s.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					return
				}
				resp.Body.Close()
				codes[i], subs[i] = resp.StatusCode, resp.Header.Get(link.HeaderRequest)
			})
		}
		wg.Wait()
		for i, s := range []*shop{a, b} {
			if codes[i] != 200 || subs[i] == "" || subs[i] == r1 || storedParent(t, s.g, subs[i]) != r1 {
				t.Fatalf("%s: a first turn at once: %d in %s, want a sub-request of %s", task, codes[i], subs[i], r1)
			}
		}
		if subs[0] == subs[1] {
			t.Fatalf("%s: both first turns at once ran in one sub-request %s; want one each", task, subs[0])
		}
	}
}
