package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/openai"
)

func begin(t *testing.T, rt *reach.Runtime, b *reach.Budget) (context.Context, *reach.Request) {
	t.Helper()
	ctx, req, err := rt.Begin(t.Context(), &reach.RequestOptions{Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(req.End)
	return ctx, req
}

// A scripted model that keeps asking for the same lookup is refused by the
// loop guard; it reads the refusal and answers instead.
func TestAgentReadsRefusals(t *testing.T) {
	rt := reach.New(nil)
	rt.MustRegister(reach.Tool{Name: "get_order", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"id":"7","status":"SHIPPED"}`), nil
	}})
	model := Script(
		Turn{Tool: "get_order", Args: `{"id":"7"}`, Repeat: 5},
		Turn{When: "already ran", Answer: "Order 7 has shipped."},
	)
	ctx, req := begin(t, rt, nil)
	out, err := (&Agent{Runtime: rt, Model: model}).Run(ctx, "where is order 7?")
	if err != nil {
		t.Fatal(err)
	}
	if out.Answer != "Order 7 has shipped." || len(out.Refusals) != 1 || out.Turns != 4 {
		t.Fatalf("outcome = %+v", out)
	}
	if u := req.Usage(); u.Turns != 4 || u.ToolCalls != 3 || u.Tokens != 400 {
		t.Errorf("usage = %+v", u)
	}
}

// The turn budget ends the loop with the budget's words.
func TestAgentStopsAtBudget(t *testing.T) {
	rt := reach.New(nil)
	n := 0
	rt.MustRegister(reach.Tool{Name: "search", Reentrancy: reach.Reentrant, Func: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		n++
		return json.Marshal(fmt.Sprintf("result %d", n))
	}})
	var turns []Turn
	for i := range 20 {
		turns = append(turns, Turn{Tool: "search", Args: fmt.Sprintf(`{"q":"page %d"}`, i)})
	}
	ctx, _ := begin(t, rt, &reach.Budget{Turns: 5})
	out, _ := (&Agent{Runtime: rt, Model: Script(turns...)}).Run(ctx, "research")
	if out.Turns != 5 || !strings.Contains(out.Stopped, "turns budget") {
		t.Fatalf("outcome = %+v", out)
	}
}

// Old exchanges are folded into a note; recent ones stay verbatim.
func TestHistoryFolding(t *testing.T) {
	h := &history{system: "s", task: "t", keep: 2}
	for i := range 5 {
		tc := openai.ToolCall{ID: fmt.Sprint(i), Type: "function"}
		tc.Function.Name, tc.Function.Arguments = "read", fmt.Sprintf(`{"page":%d}`, i)
		h.add(openai.Message{Role: "assistant", ToolCalls: []openai.ToolCall{tc}})
		h.add(openai.Message{Role: "tool", ToolCallID: tc.ID, Content: fmt.Sprintf("page %d text", i)})
	}
	msgs := h.messages()
	if len(msgs) != 3+4 {
		t.Fatalf("%d messages, want system, task, note and two exchanges", len(msgs))
	}
	note := msgs[2].Content
	for i := range 3 {
		if !strings.Contains(note, fmt.Sprintf(`read({"page":%d}) -> page %d text`, i, i)) {
			t.Errorf("note lacks exchange %d:\n%s", i, note)
		}
	}
	if msgs[3].ToolCalls[0].ID != "3" || msgs[6].Content != "page 4 text" {
		t.Errorf("recent exchanges = %+v", msgs[3:])
	}
}
