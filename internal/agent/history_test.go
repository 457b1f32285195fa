package agent

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/openai"
)

// TestFoldedNoteValidUTF8: folding cuts long arguments and results
// short; a cut inside a multi-byte character must not leave a broken one
// in the note the model reads.
func TestFoldedNoteValidUTF8(t *testing.T) {
	h := &history{system: "s", task: "t", keep: 1}
	for i := range 2 {
		tc := openai.ToolCall{ID: "c" + string(rune('0'+i)), Type: "function"}
		tc.Function.Name = "search"
		tc.Function.Arguments = `{"q":"x` + strings.Repeat("日本語", 10) + `"}` // cut at byte 60: inside a character
		h.add(openai.Message{Role: "assistant", ToolCalls: []openai.ToolCall{tc}})
		h.add(openai.Message{Role: "tool", ToolCallID: tc.ID, Content: "a" + strings.Repeat("ü", 60)}) // byte 80 is inside a character
	}
	msgs := h.messages()
	if len(msgs) < 3 || !strings.HasPrefix(msgs[2].Content, "Notes on earlier steps") {
		t.Fatalf("no folded note: %+v", msgs)
	}
	note := msgs[2].Content
	if !utf8.ValidString(note) {
		t.Errorf("the folded note is not valid UTF-8: %q", note)
	}
	if !strings.Contains(note, "search(") || !strings.Contains(note, "…") {
		t.Errorf("note = %q", note)
	}
}
