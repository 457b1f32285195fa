// Package callgraph holds what the runtime needs to reason about call stacks:
// canonical arguments, their hashes, and an ancestry filter that answers "is
// this already on the stack?" without walking the stack. (Drawing a
// request's frames is internal/render's.)
//
//	canon, err := callgraph.Normalize(nil, []byte(`{ "b":1, "a":[true, null] }`))
//	// canon == `{"a":[true,null],"b":1}`
//
// Everything here is a pure function or a value type; nothing holds locks.
package callgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/jsonscan"
)

// MaxDepth is the deepest nesting of arrays and objects Normalize accepts.
const MaxDepth = 256

// SyntaxError reports malformed JSON with the byte offset where it went wrong.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// ErrSyntax is matched by every *SyntaxError (errors.Is).
var ErrSyntax = errors.New("invalid JSON")

// Is reports whether target is ErrSyntax.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

// ErrTooDeep is matched by every *DepthError (errors.Is).
var ErrTooDeep = errors.New("JSON nested too deep")

// DepthError reports a value inside more than MaxDepth arrays and
// objects, at its byte offset. It is no syntax
// error (it does not match ErrSyntax): the JSON may be valid, and is
// refused for its depth alone.
type DepthError struct {
	Offset int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("a value inside more than %d nested arrays and objects, at byte %d", MaxDepth, e.Offset)
}

// Is reports whether target is ErrTooDeep.
func (e *DepthError) Is(target error) bool { return target == ErrTooDeep }

// Normalize appends to dst the canonical form of the JSON value in src and
// returns the extended buffer: object members sorted by key (bytewise, as
// canonical bytes), insignificant white space removed, strings in one
// canonical spelling (escapes decoded, only quotes, backslashes and control
// characters escaped), numbers in one spelling of their exact decimal value
// (1.0, 1e0 and 1 are 1; 1.50 is 1.5; 1e-7 and 0.0000001 are 1e-7; -0 is
// 0). Two argument objects that differ only in key order, spacing, string
// escapes or number spelling normalize to the same bytes. Duplicate keys are an error (their meaning is
// ambiguous). Empty input normalizes to "null". Normalize is safe for
// concurrent use.
func Normalize(dst, src []byte) ([]byte, error) {
	out, _, err := normalize(dst, src, false)
	return out, err
}

// NormalizeArguments is Normalize for a call's arguments: it also tells
// what of their member names encoding/json, which folds case, may read
// otherwise than as written (see Names).
func NormalizeArguments(dst, src []byte) ([]byte, Names, error) {
	return normalize(dst, src, true)
}

// Names is what NormalizeArguments tells of the member names of a call's
// arguments.
type Names struct {
	// Twins are the first two names of one object that differ as written
	// and are one name to encoding/json, or nil.
	Twins *Twins
	// Fold says some name has an upper case ASCII letter or a byte past
	// ASCII: without one, no name is another in another case of a schema
	// whose properties are all lower case ASCII (schema.Schema.Stray).
	Fold bool
}

func normalize(dst, src []byte, twins bool) ([]byte, Names, error) {
	n := pool.Get().(*normalizer)
	n.src, n.pos, n.scratch, n.twins, n.found, n.folds = src, 0, n.scratch[:0], twins, nil, false
	out, err := n.run(dst)
	names := Names{Twins: n.found, Fold: n.folds}
	n.src, n.found = nil, nil
	if cap(n.scratch) <= 256 && cap(n.tmp) <= 64<<10 {
		pool.Put(n)
	}
	if err != nil {
		names = Names{}
	}
	return out, names, err
}

// pool keeps normalizers, whose member scratch space is reused.
var pool = sync.Pool{New: func() any { return &normalizer{scratch: make([]member, 0, 16)} }}

func (n *normalizer) run(dst []byte) ([]byte, error) {
	n.skipSpace()
	if n.pos == len(n.src) {
		return append(dst, "null"...), nil
	}
	out, err := n.value(dst, 0)
	if err != nil {
		return dst, err
	}
	n.skipSpace()
	if n.pos != len(n.src) {
		return dst, n.errorf("unexpected %q after the value", n.src[n.pos])
	}
	return out, nil
}

type normalizer struct {
	src     []byte
	pos     int
	scratch []member // reused across objects; each object uses a window of it
	tmp     []byte   // reused to reorder an unsorted object
	twins   bool     // look for Twins
	found   *Twins   // the first found
	folds   bool     // some name may fold
}

type member struct {
	start  int  // offset of the member's key in the output
	keyLen int  // length of the key, quotes included
	end    int  // offset just past the member's value
	fold   bool // the key has an upper case ASCII letter or a byte past ASCII
}

func (n *normalizer) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: n.pos, Msg: fmt.Sprintf(format, args...)}
}

func (n *normalizer) skipSpace() {
	for n.pos < len(n.src) {
		switch n.src[n.pos] {
		case ' ', '\t', '\n', '\r':
			n.pos++
		default:
			return
		}
	}
}

func (n *normalizer) value(dst []byte, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return dst, &DepthError{Offset: n.pos}
	}
	if n.pos >= len(n.src) {
		return dst, n.errorf("unexpected end of input")
	}
	switch c := n.src[n.pos]; {
	case c == '{':
		return n.object(dst, depth)
	case c == '[':
		return n.array(dst, depth)
	case c == '"':
		s, err := n.str()
		if err != nil {
			return dst, err
		}
		return appendCanonicalString(dst, s), nil
	case c == 't':
		return n.literal(dst, "true")
	case c == 'f':
		return n.literal(dst, "false")
	case c == 'n':
		return n.literal(dst, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return n.number(dst)
	default:
		return dst, n.errorf("unexpected %q", c)
	}
}

func (n *normalizer) literal(dst []byte, lit string) ([]byte, error) {
	if !bytes.HasPrefix(n.src[n.pos:], []byte(lit)) {
		return dst, n.errorf("invalid literal, want %s", lit)
	}
	n.pos += len(lit)
	return append(dst, lit...), nil
}

// str scans a string token and returns it as written, quotes included.
func (n *normalizer) str() ([]byte, error) {
	start := n.pos
	n.pos++ // opening quote
	for n.pos < len(n.src) {
		c := n.src[n.pos]
		switch {
		case c == '"':
			n.pos++
			return n.src[start:n.pos], nil
		case c == '\\':
			if n.pos+1 >= len(n.src) {
				return nil, n.errorf("unterminated escape")
			}
			switch n.src[n.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				n.pos += 2
			case 'u':
				if n.pos+6 > len(n.src) {
					return nil, n.errorf("short \\u escape")
				}
				for _, h := range n.src[n.pos+2 : n.pos+6] {
					if !isHex(h) {
						return nil, n.errorf("invalid \\u escape")
					}
				}
				n.pos += 6
			default:
				return nil, n.errorf("invalid escape \\%c", n.src[n.pos+1])
			}
		case c < 0x20:
			return nil, n.errorf("control character in string")
		case c < utf8.RuneSelf:
			n.pos++
		default:
			r, size := utf8.DecodeRune(n.src[n.pos:])
			if r == utf8.RuneError && size == 1 {
				return nil, n.errorf("invalid UTF-8 in string")
			}
			n.pos += size
		}
	}
	return nil, n.errorf("unterminated string")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (n *normalizer) number(dst []byte) ([]byte, error) {
	start := n.pos
	if n.src[n.pos] == '-' {
		n.pos++
	}
	digits := func() int {
		s := n.pos
		for n.pos < len(n.src) && n.src[n.pos] >= '0' && n.src[n.pos] <= '9' {
			n.pos++
		}
		return n.pos - s
	}
	if n.pos < len(n.src) && n.src[n.pos] == '0' {
		n.pos++
	} else if digits() == 0 {
		return dst, n.errorf("invalid number")
	}
	if n.pos < len(n.src) && n.src[n.pos] == '.' {
		n.pos++
		if digits() == 0 {
			return dst, n.errorf("invalid number: no digits after '.'")
		}
	}
	if n.pos < len(n.src) && (n.src[n.pos] == 'e' || n.src[n.pos] == 'E') {
		n.pos++
		if n.pos < len(n.src) && (n.src[n.pos] == '+' || n.src[n.pos] == '-') {
			n.pos++
		}
		if digits() == 0 {
			return dst, n.errorf("invalid number: no digits in exponent")
		}
	}
	return appendNumber(dst, n.src[start:n.pos]), nil
}

// appendNumber appends the canonical spelling of the valid JSON number
// num: its exact decimal value with no leading or trailing zeros. An
// integer literal is kept as written; another spelling of an integer is
// written as one when it has at most maxIntDigits digits (1e1000 does not
// become a thousand digits); a fraction is written as a decimal fraction
// when its point is at most 6 places before the first digit, else as
// d.ddde±N.
const maxIntDigits = 40

func appendNumber(dst, num []byte) []byte {
	if bytes.IndexAny(num, ".eE") < 0 && !(len(num) == 2 && num[0] == '-' && num[1] == '0') {
		// An integer as JSON writes one stays so, however long (a
		// 256-bit amount must reach its tool as an integer).
		return append(dst, num...)
	}
	neg := num[0] == '-'
	if neg {
		num = num[1:]
	}
	mant, expPart := num, []byte(nil)
	if i := bytes.IndexAny(num, "eE"); i >= 0 {
		mant, expPart = num[:i], num[i+1:]
	}
	exp := 0
	if len(expPart) > 0 {
		sign := 1
		switch expPart[0] {
		case '-':
			sign, expPart = -1, expPart[1:]
		case '+':
			expPart = expPart[1:]
		}
		expPart = bytes.TrimLeft(expPart, "0")
		if len(expPart) > 9 { // beyond any float: keep it as written
			if neg {
				dst = append(dst, '-')
			}
			return append(dst, num...)
		}
		for _, c := range expPart {
			exp = exp*10 + int(c-'0')
		}
		exp *= sign
	}
	intPart, frac := mant, []byte(nil)
	if i := bytes.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	// The value is 0.digits × 10^point.
	digits := append(append(make([]byte, 0, len(intPart)+len(frac)), intPart...), frac...)
	point := len(intPart) + exp
	lead := len(digits) - len(bytes.TrimLeft(digits, "0"))
	digits, point = digits[lead:], point-lead
	digits = bytes.TrimRight(digits, "0")
	if len(digits) == 0 {
		return append(dst, '0')
	}
	if neg {
		dst = append(dst, '-')
	}
	switch {
	case point >= len(digits) && point <= maxIntDigits:
		dst = append(dst, digits...)
		for range point - len(digits) {
			dst = append(dst, '0')
		}
	case point > 0 && point < len(digits):
		dst = append(append(append(dst, digits[:point]...), '.'), digits[point:]...)
	case point <= 0 && point > -6:
		dst = append(dst, '0', '.')
		for range -point {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if len(digits) > 1 {
			dst = append(append(dst, '.'), digits[1:]...)
		}
		dst = append(dst, 'e')
		dst = strconv.AppendInt(dst, int64(point-1), 10)
	}
	return dst
}

func (n *normalizer) array(dst []byte, depth int) ([]byte, error) {
	n.pos++
	dst = append(dst, '[')
	n.skipSpace()
	if n.pos < len(n.src) && n.src[n.pos] == ']' {
		n.pos++
		return append(dst, ']'), nil
	}
	for {
		n.skipSpace()
		var err error
		if dst, err = n.value(dst, depth+1); err != nil {
			return dst, err
		}
		n.skipSpace()
		if n.pos >= len(n.src) {
			return dst, n.errorf("unterminated array")
		}
		switch n.src[n.pos] {
		case ',':
			n.pos++
			dst = append(dst, ',')
		case ']':
			n.pos++
			return append(dst, ']'), nil
		default:
			return dst, n.errorf("want ',' or ']' in array, got %q", n.src[n.pos])
		}
	}
}

// object writes the members straight into dst, remembering where each one
// lies; only an object whose keys were out of order is then rewritten in
// key order (generated arguments are usually sorted already).
func (n *normalizer) object(dst []byte, depth int) ([]byte, error) {
	n.pos++
	n.skipSpace()
	if n.pos < len(n.src) && n.src[n.pos] == '}' {
		n.pos++
		return append(dst, "{}"...), nil
	}
	base := len(n.scratch)
	defer func() { n.scratch = n.scratch[:base] }()
	dst = append(dst, '{')
	region := len(dst)
	sorted, folds := true, false
	for {
		n.skipSpace()
		if n.pos >= len(n.src) || n.src[n.pos] != '"' {
			return dst, n.errorf("want a string key in object")
		}
		key, err := n.str()
		if err != nil {
			return dst, err
		}
		n.skipSpace()
		if n.pos >= len(n.src) || n.src[n.pos] != ':' {
			return dst, n.errorf("want ':' after object key")
		}
		n.pos++
		n.skipSpace()
		if len(n.scratch) > base {
			dst = append(dst, ',')
		}
		start := len(dst)
		dst = appendCanonicalString(dst, key)
		keyLen := len(dst) - start
		if k := len(n.scratch); k > base {
			prev := n.scratch[k-1]
			switch c := bytes.Compare(dst[prev.start:prev.start+prev.keyLen], dst[start:start+keyLen]); {
			case c == 0:
				return dst, n.errorf("duplicate key %s", key)
			case c > 0:
				sorted = false
			}
		}
		dst = append(dst, ':')
		if dst, err = n.value(dst, depth+1); err != nil {
			return dst, err
		}
		m := member{start: start, keyLen: keyLen, end: len(dst)}
		if n.twins && mayFold(dst[start:start+keyLen]) {
			m.fold, folds = true, true
		}
		n.scratch = append(n.scratch, m)
		n.skipSpace()
		if n.pos >= len(n.src) {
			return dst, n.errorf("unterminated object")
		}
		if n.src[n.pos] == ',' {
			n.pos++
			continue
		}
		if n.src[n.pos] != '}' {
			return dst, n.errorf("want ',' or '}' in object, got %q", n.src[n.pos])
		}
		n.pos++
		break
	}
	if folds {
		n.folds = true
		if n.found == nil {
			n.found = twins(dst, n.scratch[base:])
		}
	}
	if !sorted {
		ms := n.scratch[base:]
		n.tmp = append(n.tmp[:0], dst[region:]...) // nested objects are done: tmp is free
		tmp := n.tmp
		key := func(m member) []byte { return tmp[m.start-region : m.start-region+m.keyLen] }
		slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(key(a), key(b)) })
		for i := 1; i < len(ms); i++ {
			if bytes.Equal(key(ms[i-1]), key(ms[i])) {
				return dst, &SyntaxError{Offset: n.pos, Msg: "duplicate key " + string(key(ms[i]))}
			}
		}
		dst = dst[:region]
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, tmp[m.start-region:m.end-region]...)
		}
	}
	return append(dst, '}'), nil
}

// appendCanonicalString appends the JSON string token tok (quotes included,
// already checked by str) in one canonical spelling, so that two spellings of
// the same string ("a" and "\u0061") compare equal: escapes are decoded, and
// only '"', '\\' and control characters are escaped again (\n, \r, \t, \b,
// \f, or \u00XX). A token without a backslash is already canonical.
func appendCanonicalString(dst, tok []byte) []byte {
	if bytes.IndexByte(tok, '\\') < 0 {
		return append(dst, tok...)
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return append(dst, tok...) // cannot happen for a token str accepted
	}
	dst = append(dst, '"')
	dst = jsonscan.AppendEscapedShort(dst, s)
	return append(dst, '"')
}
