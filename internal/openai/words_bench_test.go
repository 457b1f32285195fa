package openai

import (
	"strings"
	"testing"
)

// BenchmarkPromptWords counts the words of a chat request of some 40 KB,
// with escapes in its strings, as the model proxy does once per turn.
func BenchmarkPromptWords(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"model":"m","messages":[`)
	for i := range 200 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"role":"user","content":"the quick brown fox\njumps over\tthe lazy dog\u0020again \u00e9t\u00e9 \"quoted\" words of a turn, some more of them here and there"}`)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		PromptWords(body)
	}
}

// BenchmarkWordsAdd counts the words of an answer's text as the model
// proxy does for each chunk of a stream: English, accented and CJK text
// (bytes past ASCII, each of which Add looks at for a wide space).
func BenchmarkWordsAdd(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"ASCII", strings.Repeat("the quick brown fox jumps over the lazy dog ", 100)},
		{"Accented", strings.Repeat("l'été dernier, à Zürich, le café était très crémeux ", 100)},
		{"CJK", strings.Repeat("今日は良い天気ですね。明日も晴れるでしょう。", 100)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				var w Words
				w.Add(c.text)
			}
		})
	}
}

// BenchmarkPromptWordsDeep: a 1 MB string under 2,000 levels of a tool's
// parameters (each level read it again before maxCountDepth).
func BenchmarkPromptWordsDeep(b *testing.B) {
	body := deepBody(2000, strings.TrimSpace(strings.Repeat("word ", 200000)))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		PromptWords(body)
	}
}
