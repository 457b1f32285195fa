package modelproxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/openai"
)

// TestToolCallsOnlyFloored: an answer that holds only tool calls, its
// usage reported as 0, is charged the words of the calls' arguments, in a
// chat completion (whole and streamed in pieces) and in a Responses API
// answer: else an agent whose model only calls tools runs free under a
// token budget.
func TestToolCallsOnlyFloored(t *testing.T) {
	const words = 300
	args, _ := json.Marshal(strings.Repeat("row ", words))
	argsJSON := fmt.Sprintf(`{"sql":%s}`, args)
	prompt := []byte(`{"messages":[{"role":"user","content":"count the rows"}]}`)

	var whole openai.Completion
	if err := json.Unmarshal(fmt.Appendf(nil, `{"choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"query","arguments":%q}}]}}],"usage":{"prompt_tokens":0,"completion_tokens":0}}`, argsJSON), &whole); err != nil {
		t.Fatal(err)
	}
	a := &answer{}
	a.note(&whole)
	if u := a.usage(prompt); u.Output < words || u.Input < 3 {
		t.Errorf("a whole answer of one tool call of %d words, reported as 0 tokens, was charged %d in and %d out, want at least 3 and %d", words, u.Input, u.Output, words)
	}

	s := &answer{}
	for i := 0; i < len(argsJSON); i += 5 {
		var c openai.Completion
		piece := argsJSON[i:min(i+5, len(argsJSON))]
		json.Unmarshal(fmt.Appendf(nil, `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":%q}}]}}]}`, piece), &c)
		s.note(&c)
	}
	var last openai.Completion
	json.Unmarshal([]byte(`{"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0}}`), &last)
	s.note(&last)
	if u := s.usage(prompt); u.Output < words {
		t.Errorf("a streamed tool call of %d words, reported as 0 tokens, was charged %d out, want at least %d", words, u.Output, words)
	}

	var r responseBody
	if err := json.Unmarshal(fmt.Appendf(nil, `{"id":"resp_1","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"query","arguments":%q}],"usage":{"input_tokens":0,"output_tokens":0}}`, argsJSON), &r); err != nil {
		t.Fatal(err)
	}
	ra := &answer{}
	ra.noteResponse(&r)
	if u := ra.usage([]byte(`{"input":"count the rows"}`)); u.Output < words || u.Input < 3 {
		t.Errorf("a Responses answer of one function call of %d words, reported as 0 tokens, was charged %d in and %d out, want at least 3 and %d", words, u.Input, u.Output, words)
	}
}
