package modelproxy

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// The prompt's estimate for the token budget. A turn's prompt is counted
// before it is sent (to cap its answer at what the budget has left, to
// refuse a prompt that alone would spend it, to hold it on the shared
// ledger), and only the endpoint's usage says what it was. Four bytes a
// token is about right for English prose and code, and up to four times
// short of text made of short pieces: digits apart ("1 2 3": a token
// each), CJK (a common ideograph is 3 bytes and up to 2.3 tokens; a rare
// one, or a Hangul syllable, 3), emoji (4 bytes, up to 3 tokens),
// punctuation (random runs about 0.7 tokens a character), random letters
// (0.5 to 0.7). A budget would then be spent past its end once, by the
// prompt the estimate missed.
//
// promptTokens counts the way byte-pair encodings split text instead
// (the pre-tokenizers of cl100k_base and o200k_base: runs of letters, of
// one to three digits, of punctuation, of whitespace, each one token at
// least, never a token across two), with each piece's most per character
// as measured on random text of its class with both encodings (a
// character is never more tokens than its UTF-8 bytes): an upper-leaning
// estimate, which English prose and code overrun by about two (table in
// estimate_test.go), and no vocabulary (no network, no file). The JSON's
// own punctuation and names count four bytes a token, the text of its
// strings as it reads decoded (a \u escape as its character), and its
// numbers within its members as they read in text (a tool schema's enum
// is text to the model, its numbers a token each at least). A base64
// data URL (an image, a file inlined) counts its bytes four a token as
// before where the model takes it as one (an image part's url or
// image_url, a file part's file_data): what the model counts of it is not
// its bytes (an image: imageTokens; a file, by id or inlined, the model's
// window: fileRefs). Anywhere else (a message's text) it is text.

// Costs, in eighths of a token.
const (
	eighth       = 8
	costLower    = 5  // a lowercase ASCII letter (random: 0.54 tokens)
	costUpper    = 6  // an uppercase one (random: 0.59)
	costSwitch   = 2  // a lowercase letter followed by an uppercase one (random mixed case: 0.67)
	costPunct    = 6  // ASCII punctuation (random runs: 0.66)
	costSpace    = 4  // whitespace, but for one space before a word (random runs: 0.33)
	costStruct   = 2  // a byte of the JSON outside its strings
	costTwoByte  = 12 // a 2-byte character (Latin, Greek, Cyrillic, Arabic, Hebrew: random 1.28 at most)
	costCombine  = 16 // a combining mark (2 bytes, a token or two)
	costKana     = 16 // kana (random: 1.49)
	costCJK      = 20 // a common CJK ideograph (random: 2.34 in cl100k_base, 1.90 in o200k_base)
	costThree    = 24 // any other 3-byte character: at most its bytes
	costFour     = 32 // a 4-byte character (emoji, rare ideographs): at most its bytes
	costControl  = 8  // a control character
	costMinPiece = 8  // a piece is a token at least
)

// class is the kind of piece a character begins or goes on.
type class uint8

const (
	clNone class = iota
	clLetter
	clDigit
	clPunct
	clSpace
	clOther // a character counted alone (non-ASCII, control)
)

// pieces counts the text of one JSON string, as decoded characters are
// given to it, in eighths of a token.
type pieces struct {
	total  int64
	cl     class
	n      int64 // characters of the current piece
	cost   int64 // its cost so far
	lower  bool  // its last letter was lowercase
	spaces int64 // whitespace characters of the current whitespace piece
	single bool  // that piece is one space
}

// end closes the current piece; next is the class that follows.
func (p *pieces) end(next class) {
	switch p.cl {
	case clLetter, clPunct:
		p.total += max(p.cost, costMinPiece)
	case clDigit:
		p.total += (p.n + 2) / 3 * eighth
	case clSpace:
		if !(p.single && (next == clLetter || next == clPunct)) {
			p.total += max(p.spaces*costSpace, costMinPiece)
		}
	}
	p.cl, p.n, p.cost, p.spaces, p.lower = clNone, 0, 0, 0, false
}

// add counts character r.
func (p *pieces) add(r rune) {
	var c class
	switch {
	case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		c = clLetter
	case r >= '0' && r <= '9':
		c = clDigit
	case r == ' ' || r == '\n' || r == '\t' || r == '\r':
		c = clSpace
	case r > ' ' && r < 0x7f:
		c = clPunct
	default:
		c = clOther
	}
	if c != p.cl || c == clOther {
		p.end(c)
		p.cl = c
		if c == clSpace {
			p.single = r == ' '
		}
	}
	p.n++
	switch c {
	case clLetter:
		upper := r <= 'Z'
		if upper {
			p.cost += costUpper
			if p.lower {
				p.cost += costSwitch
			}
		} else {
			p.cost += costLower
		}
		p.lower = !upper
	case clPunct:
		p.cost += costPunct
	case clSpace:
		p.spaces++
		if p.spaces > 1 || r != ' ' {
			p.single = false
		}
	case clOther:
		p.total += runeCost(r)
		p.cl = clNone
	}
}

// runeCost is what a character past ASCII (or a control character) counts,
// in eighths of a token.
func runeCost(r rune) int64 {
	switch {
	case r < 0x80:
		return costControl
	case r >= 0x300 && r <= 0x36f:
		return costCombine
	case r < 0x800:
		return costTwoByte
	case r >= 0x3040 && r <= 0x30ff:
		return costKana
	case r >= 0x4e00 && r <= 0x9fff:
		return costCJK
	case r < 0x10000:
		return costThree
	default:
		return costFour
	}
}

// dataURL reports whether the JSON string whose text begins at body[i] is
// a base64 data URL ("data:" MEDIA-TYPE ";base64," then base64 alone, a
// slash escaped or not), and the index of its closing quote. Any other
// string that begins "data:" (an SSE line quoted in a tool's result, a
// message) is text, counted as text.
func dataURL(body []byte, i int) (int, bool) {
	if i+5 > len(body) || string(body[i:i+5]) != "data:" {
		return 0, false
	}
	j := i + 5
	for ; j < len(body) && body[j] != ','; j++ {
		c := body[j]
		if c == '\\' && j+1 < len(body) && body[j+1] == '/' {
			j++
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&^_.+-/;=", c) >= 0) {
			return 0, false
		}
	}
	if j >= len(body) || !bytes.HasSuffix(body[i:j], []byte(";base64")) {
		return 0, false
	}
	for j++; j < len(body); j++ {
		c := body[j]
		switch {
		case c == '"':
			return j, true
		case c == '\\' && j+1 < len(body) && body[j+1] == '/':
			j++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=':
		default:
			return 0, false
		}
	}
	return 0, false
}

// mediaKeys are the names whose string value the model takes as an image
// or a file when it is a data URL (an image part's url or image_url, a
// file part's file_data), not as text.
var mediaKeys = []string{`"url"`, `"image_url"`, `"file_data"`}

// mediaKey reports whether the JSON string whose opening quote is body[q]
// is the value of one of mediaKeys.
func mediaKey(body []byte, q int) bool {
	k := q - 1
	for k >= 0 && isJSONSpace(body[k]) {
		k--
	}
	if k < 0 || body[k] != ':' {
		return false
	}
	for k--; k >= 0 && isJSONSpace(body[k]); k-- {
	}
	for _, name := range mediaKeys {
		if k+1 >= len(name) && string(body[k+1-len(name):k+1]) == name {
			// The key's opening quote is not an escaped quote's end, and
			// so not text that quotes the name: a key's quote follows
			// '{', ',' or whitespace.
			b := k + 1 - len(name) - 1
			for b >= 0 && isJSONSpace(body[b]) {
				b--
			}
			return b >= 0 && (body[b] == '{' || body[b] == ',')
		}
	}
	return false
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// promptTokens is the upper-leaning estimate of the tokens of a prompt,
// its request body encoded as JSON (see above).
func promptTokens(body []byte) int64 {
	var total, depth int64
	for i := 0; i < len(body); {
		c := body[i]
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
		if depth > 1 && (c == '-' || c >= '0' && c <= '9') {
			// A number within a member (a tool schema's enum, its
			// defaults): text to the model, counted as it would be in a
			// string. The request's own (max_tokens, temperature) are
			// not read by the model.
			var p pieces
			for ; i < len(body) && strings.IndexByte("0123456789.eE+-", body[i]) >= 0; i++ {
				p.add(rune(body[i]))
			}
			p.end(clNone)
			total += p.total
			continue
		}
		if c != '"' {
			total += costStruct
			i++
			continue
		}
		total += costStruct
		i++
		if !mediaKey(body, i-1) {
			// A data URL anywhere else (a message's text, a tool's
			// result) is text to the model: counted as text.
		} else if j, ok := dataURL(body, i); ok {
			// A data URL (base64): four bytes a token, to its end.
			total += int64(j-i) * costStruct
			i = j + 1
			continue
		}
		var p pieces
		for i < len(body) && body[i] != '"' {
			c := body[i]
			switch {
			case c == '\\' && i+1 < len(body):
				r, n := unescape(body[i:])
				p.add(r)
				i += n
			case c < utf8.RuneSelf:
				p.add(rune(c))
				i++
			default:
				r, n := utf8.DecodeRune(body[i:])
				p.add(r)
				i += n
			}
		}
		p.end(clNone)
		total += p.total
		i++ // the closing quote
	}
	return (total + eighth - 1) / eighth
}

// unescape reads the JSON escape at the start of b: its character and
// length (a \u escape of a surrogate pair, both halves).
func unescape(b []byte) (rune, int) {
	switch b[1] {
	case 'n':
		return '\n', 2
	case 't':
		return '\t', 2
	case 'r':
		return '\r', 2
	case 'b', 'f':
		return 1, 2 // a control character
	case 'u':
		r, ok := hex4(b[2:])
		if !ok {
			return 'u', 2
		}
		if r >= 0xd800 && r < 0xdc00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if lo, ok := hex4(b[8:]); ok && lo >= 0xdc00 && lo < 0xe000 {
				return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), 12
			}
		}
		return r, 6
	default:
		return rune(b[1]), 2 // \" \\ \/
	}
}

// hex4 reads four hexadecimal digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}
