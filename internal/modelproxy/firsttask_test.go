package modelproxy

import (
	"encoding/json"
	"testing"
)

// TestFirstTask: a conversation's first turn (system or developer
// messages and one user message, or the Responses API's string input) has
// the user's text as its task; a turn with an answer, a tool's result, a
// second user message or a stored conversation has none.
func TestFirstTask(t *testing.T) {
	for _, tc := range []struct {
		api  apiKind
		body string
		want string
	}{
		{chatAPI, `{"messages":[{"role":"system","content":"Use the tools."},{"role":"user","content":"legit"}]}`, "legit"},
		{chatAPI, `{"messages":[{"role":"user","content":[{"type":"text","text":"le"},{"type":"text","text":"git"}]}]}`, "legit"},
		{chatAPI, `{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`, ""},
		{chatAPI, `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`, ""},
		{chatAPI, `{"messages":[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"c","content":"b"}]}`, ""},
		{chatAPI, `{"messages":[{"role":"system","content":"only"}]}`, ""},
		{chatAPI, `{"messages":"nope"}`, ""},
		{responsesAPI, `{"input":"legit"}`, "legit"},
		{responsesAPI, `{"instructions":"x","input":[{"type":"message","role":"user","content":"legit"}]}`, "legit"},
		{responsesAPI, `{"input":[{"role":"developer","content":"x"},{"role":"user","content":[{"type":"input_text","text":"legit"}]}]}`, "legit"},
		{responsesAPI, `{"input":[{"role":"user","content":"a"},{"type":"function_call","call_id":"c","name":"t","arguments":"{}"}]}`, ""},
		{responsesAPI, `{"previous_response_id":"resp_1","input":"legit"}`, ""},
		{responsesAPI, `{"conversation":"conv_1","input":"legit"}`, ""},
		{responsesAPI, `{"previous_response_id":null,"input":"legit"}`, "legit"},
	} {
		var body map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.body), &body); err != nil {
			t.Fatal(err)
		}
		if got := firstTask(tc.api, body); got != tc.want {
			t.Errorf("firstTask(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

// FuzzFirstTask: any body decodes without a panic, and a task found is
// the text of a message the body holds.
func FuzzFirstTask(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"legit"}]}`, false)
	f.Add(`{"input":[{"role":"user","content":[{"text":"x"}]}]}`, true)
	f.Add(`{"input":"x"}`, true)
	f.Fuzz(func(t *testing.T, raw string, responses bool) {
		var body map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &body) != nil {
			return
		}
		api := chatAPI
		if responses {
			api = responsesAPI
		}
		task := firstTask(api, body)
		if task == "" || responses {
			return
		}
		var msgs []struct {
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(body["messages"], &msgs)
		for _, m := range msgs {
			if contentText(m.Content) == task {
				return
			}
		}
		t.Errorf("task %q is no message's text in %s", task, raw)
	})
}
