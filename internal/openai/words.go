package openai

import (
	"unicode/utf8"

	"github.com/agentreach/reach/internal/jsonscan"
)

// The floor of a reported usage (counted's, and the model proxy's). An
// endpoint that reports fewer tokens than reach can count in the turn's text (0, as some local servers do, or a
// count a hostile endpoint lowered) is charged what reach counts: else a
// budget never stops it. What reach counts must stay at or below what a
// real endpoint reports, so that its count is the one charged: it is the
// words (runs of bytes between ASCII white space, or the Unicode spaces
// that NFKC makes one: wideSpace), as the tokenizers of the
// common models split text at white space before they merge it (tiktoken's
// vocabularies, SentencePiece's by default), so that no token holds two
// words; and a word of more than MaxTokenBytes bytes counts once for each
// MaxTokenBytes begun, as no token of those vocabularies is that long (a
// hostile answer of one long word is not one token). Of the prompt, only
// the strings the endpoint renders into the model's context are counted
// (promptTextKeys): a data URL or an id is not text the model reads.

// MaxTokenBytes is the length past which a word counts as more than one
// token.
const MaxTokenBytes = 256

// Words counts the words of a text given in pieces (a stream's chunks): a
// word split across two pieces counts once.
type Words struct {
	N   int64
	Run int // bytes of the word the last piece ended in (0: it ended in white space)

	walked int // objects and arrays countValue walked member by member
}

// isSpace reports whether c is white space: JSON's (a tokenizer's \s has
// more, but a byte it splits at and this does not only makes a word of two:
// a lower count, a floor still).
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// wideSpace reports whether r is one of the Unicode spaces that NFKC (the
// normalization of SentencePiece's common models) makes an ASCII space,
// all of them white space to the tiktoken vocabularies' split (\s) too: a
// tokenizer splits at them as at a space. An endpoint that joined its
// words with them (a no-break space looks like a space) was counted one
// word for every MaxTokenBytes. Other characters (joiners, zero-width
// spaces, line separators) are parts of a word: a lower count.
func wideSpace(r rune) bool {
	return r == 0xA0 || r >= 0x2000 && r <= 0x200A || r == 0x202F || r == 0x205F || r == 0x3000
}

// Add counts the words of s, which goes on from the pieces before it.
func (w *Words) Add(s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			// A rune past ASCII is decoded once: a wide space, or every
			// byte of it a word's (none is ASCII white space).
			r, n := utf8.DecodeRuneInString(s[i:])
			if wideSpace(r) {
				w.Run = 0
			} else {
				for j := range n {
					w.addByte(s[i+j])
				}
			}
			i += n - 1
			continue
		}
		w.addByte(c)
	}
}

// addByte counts c, the byte after those counted: white space ends a word.
func (w *Words) addByte(c byte) {
	if isSpace(c) {
		w.Run = 0
		return
	}
	if w.Run%MaxTokenBytes == 0 {
		w.N++
	}
	w.Run++
}

// promptTextKeys are the members of a chat or Responses API request whose
// strings are text the endpoint renders into the model's context: message
// contents and their text parts, tool calls' arguments and results, tools'
// descriptions, instructions.
var promptTextKeys = map[string]bool{
	"content": true, "text": true, "refusal": true, "arguments": true, "description": true,
	"instructions": true, "input": true, "output": true,
}

// notRendered are the members of a request whose values the endpoint does
// not render into the model's context, whatever text they hold: a
// predicted output (billed as completion tokens, if at all), metadata
// (labels for the caller's dashboard).
var notRendered = map[string]bool{"prediction": true, "metadata": true}

// PromptWords counts the words of the text in a request's body (JSON): the
// strings of the members promptTextKeys names, at any depth, but for
// those under a member notRendered names. A body that is
// not JSON counts nothing.
func PromptWords(body []byte) int64 {
	var w Words
	countValue(&w, body, false, promptTextKeys, 0)
	return w.N
}

// answerTextKeys are promptTextKeys and the members where an answer's
// chunk or event puts its text: a Responses event's delta, a chat delta
// (an object: its text members), a transcript, reasoning.
var answerTextKeys = map[string]bool{
	"content": true, "text": true, "refusal": true, "arguments": true, "description": true,
	"instructions": true, "input": true, "output": true,
	"delta": true, "transcript": true, "reasoning": true, "reasoning_content": true,
}

// AnswerWords counts the words of the text in a chunk or event of an
// answer (JSON) that reach could not read as its API's: the strings of the
// members answerTextKeys names, at any depth. Its client's SDK may read
// it (they pass over a member of another type than the API's), so the
// floor of a reported usage counts them. A body that is not JSON counts
// nothing.
func AnswerWords(body []byte) int64 {
	var w Words
	countValue(&w, body, false, answerTextKeys, 0)
	return w.N
}

// maxCountDepth is the depth of nesting below which countValue counts the
// words of every string. Each level skips over the values it holds to find
// their ends, and then reads each again, so that a value nested n deep was
// read n times: a 4 MB request, a string under 2,000 levels of a tool's
// parameters, took reach serve 16.8 s, and the decoder lets a body nest 10,000
// deep. Below it, one pass counts every string's words, a text member's or
// not: the text members' words are all counted (the floor is not lowered;
// a value nested this deep is rare but for a crafted body), with more.
const maxCountDepth = 32

// countValue counts the words of the JSON value v: of its strings if text
// (the value, or the array holding it, is a text member's), and of the text
// members of the objects it holds. depth is how deep v is.
func countValue(w *Words, v []byte, text bool, keys map[string]bool, depth int) {
	i := jsonscan.SkipSpace(v, 0)
	if i >= len(v) {
		return
	}
	if depth >= maxCountDepth && (v[i] == '{' || v[i] == '[') {
		countStrings(w, v[i:])
		return
	}
	switch v[i] {
	case '"':
		if text {
			countString(w, v[i:])
		}
	case '{':
		w.walked++
		// A key given twice is read as its last value (as the endpoint's
		// JSON decoder reads it): the others are not counted.
		var ms []member
		jsonscan.Members(v[i:], func(key, value []byte) {
			k, ok := jsonscan.Unquote(key)
			if !ok {
				return
			}
			ms = append(ms, member{k, value})
		})
		var last map[string]int
		if len(ms) > 16 {
			last = make(map[string]int, len(ms))
			for j, m := range ms {
				last[m.key] = j
			}
		}
		for j, m := range ms {
			if notRendered[m.key] || last != nil && last[m.key] != j || last == nil && givenAgain(ms[j+1:], m.key) {
				continue
			}
			countValue(w, m.value, keys[m.key], keys, depth+1)
		}
	case '[':
		w.walked++
		for i = jsonscan.SkipSpace(v, i+1); i < len(v) && v[i] != ']'; {
			e := jsonscan.SkipValue(v, i)
			if e <= i {
				return
			}
			countValue(w, v[i:e], text, keys, depth+1)
			i = jsonscan.SkipSpace(v, e)
			if i < len(v) && v[i] == ',' {
				i = jsonscan.SkipSpace(v, i+1)
			}
		}
	}
}

// countStrings counts the words of every string of v, in one pass.
func countStrings(w *Words, v []byte) {
	for i := 0; i < len(v); {
		if v[i] != '"' {
			i++
			continue
		}
		e := jsonscan.SkipString(v, i)
		countString(w, v[i:e])
		i = e
	}
}

// member is a member of a JSON object: its key (unquoted) and its value.
type member struct {
	key   string
	value []byte
}

// givenAgain reports whether ms has a member named key.
func givenAgain(ms []member, key string) bool {
	for _, m := range ms {
		if m.key == key {
			return true
		}
	}
	return false
}

// countString counts the words of a JSON string token as written: an
// escape of white space (\n, \t, \r, \u0020, \u00a0...: jsonscan.AppendUnescape
// decodes it) is white space; any other is one byte of a word (a lower
// count). It never counts more than the string decoded holds
// (FuzzPromptWords).
func countString(w *Words, tok []byte) {
	w.Run = 0
	end := jsonscan.SkipString(tok, 0) - 1 // the closing quote
	for i := 1; i < end; i++ {
		c := tok[i]
		if c == '\\' && i+1 < end {
			var buf [4]byte
			d, _, ok := jsonscan.AppendUnescape(buf[:0], tok[:end], i)
			if r, _ := utf8.DecodeRune(d); ok && (len(d) == 1 && isSpace(d[0]) || wideSpace(r)) {
				c = ' '
			} else {
				c = 'x'
			}
			if i++; tok[i] == 'u' {
				i += 4
			}
		} else if c >= utf8.RuneSelf {
			// Decoded once, as in Add: its bytes but the last counted here.
			r, n := utf8.DecodeRune(tok[i:end])
			if wideSpace(r) {
				c = ' '
			} else {
				for j := range n - 1 {
					w.addByte(tok[i+j])
				}
			}
			i += n - 1
		}
		w.addByte(c)
	}
	w.Run = 0
}

// BytesPerToken is the estimate's rate, for an answer without usage: about
// four bytes of English text (and fewer of code or other scripts) make a
// token.
const BytesPerToken = 4

// EstimateTokens is the tokens of n bytes at BytesPerToken, rounded up.
func EstimateTokens(n int) int64 { return int64((n + BytesPerToken - 1) / BytesPerToken) }

// counted is the usage an answer (m) to a request (body) is charged: the
// usage the endpoint reported (u), each count raised to the words of its
// side's text; or, when it reported none (or a count below zero), an
// estimate at BytesPerToken of the body and of the answer's text and tool
// arguments.
func counted(u *Usage, body []byte, m *Message) Usage {
	var out Words
	said := 0
	if m != nil {
		out.Add(m.Content)
		said += len(m.Content)
		out.Run = 0
		out.Add(m.Refusal)
		said += len(m.Refusal)
		if fc := m.FunctionCall; fc != nil {
			out.Run = 0
			out.Add(fc.Arguments)
			said += len(fc.Arguments)
		}
		if au := m.Audio; au != nil {
			out.Run = 0
			out.Add(au.Transcript)
			said += len(au.Transcript)
		}
		for _, tc := range m.ToolCalls {
			out.Run = 0
			out.Add(tc.Function.Arguments)
			said += len(tc.Function.Arguments)
			if cc := tc.Custom; cc != nil {
				out.Run = 0
				out.Add(cc.Input)
				said += len(cc.Input)
			}
		}
	}
	if u == nil || u.PromptTokens < 0 || u.CompletionTokens < 0 {
		return Usage{PromptTokens: EstimateTokens(len(body)), CompletionTokens: EstimateTokens(said)}
	}
	return Usage{PromptTokens: max(u.PromptTokens, PromptWords(body)), CompletionTokens: max(u.CompletionTokens, out.N)}
}
