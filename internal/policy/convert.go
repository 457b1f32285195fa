package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/cedar-policy/cedar-go/types"
)

// Arguments are converted from JSON to Cedar values as follows (Cedar has
// no floats, no null and no lists):
//
//   - an object becomes a record (a null member is left out, so `has` is false);
//   - an array becomes a set (order and duplicates are lost; nulls are left out);
//   - a string stays a string (a path with "." or ".." segments or doubled
//     slashes cleaned: see pathView), true and false stay booleans;
//   - a number whose value is a whole number within int64 becomes a Long
//     (2, 2.0 and 2e0 alike, as JSON Schema's "integer");
//   - another number with at most four decimal places within the decimal range
//     becomes a decimal (use .lessThan(decimal("9.99")) and friends on it);
//   - any other number becomes the string it was written as;
//   - values nested deeper than [ArgumentDepth] become the string of their JSON.
const (
	// ArgumentDepth is how deep objects and arrays are converted to records
	// and sets; deeper values become strings of their JSON text.
	ArgumentDepth = 32
	// maxNesting is the deepest JSON accepted at all.
	maxNesting = 512
)

var errArgs = errors.New("invalid JSON arguments")

// Arguments converts a JSON value (a tool call's arguments) to a Cedar
// value: a record for an object. Empty input is an empty record. It never
// panics; malformed JSON is an error.
func Arguments(b []byte) (types.Value, error) {
	p := argParser{b: b}
	p.space()
	if p.i == len(b) {
		return types.NewRecord(nil), nil
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(b) {
		return nil, p.errorf("unexpected %q after the value", b[p.i])
	}
	if v == nil { // top-level null
		return types.NewRecord(nil), nil
	}
	return v, nil
}

type argParser struct {
	b []byte
	i int
}

func (p *argParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", errArgs, p.i, fmt.Sprintf(format, args...))
}

func (p *argParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value parses one value; a nil Value is JSON null.
func (p *argParser) value(depth int) (types.Value, error) {
	if depth > maxNesting {
		return nil, p.errorf("nested more than %d deep", maxNesting)
	}
	if p.i >= len(p.b) {
		return nil, p.errorf("unexpected end")
	}
	start := p.i
	switch c := p.b[p.i]; {
	case c == '{':
		rec, err := p.object(depth)
		if err != nil || depth < ArgumentDepth {
			return rec, err
		}
		return types.String(p.b[start:p.i]), nil
	case c == '[':
		set, err := p.array(depth)
		if err != nil || depth < ArgumentDepth {
			return set, err
		}
		return types.String(p.b[start:p.i]), nil
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return types.String(pathView(s)), nil
	case c == 't':
		return types.True, p.literal("true")
	case c == 'f':
		return types.False, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errorf("unexpected %q", c)
	}
}

func (p *argParser) literal(lit string) error {
	if len(p.b)-p.i < len(lit) || string(p.b[p.i:p.i+len(lit)]) != lit {
		return p.errorf("invalid literal")
	}
	p.i += len(lit)
	return nil
}

func (p *argParser) object(depth int) (types.Value, error) {
	p.i++ // {
	m := getMap()
	defer putMap(m)
	var nulls map[string]bool // null members: absent, but still names for duplicates
	for done := p.closes('}'); !done; {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, p.errorf("expected a member name")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if _, dup := m[types.String(k)]; dup || nulls[k] {
			return nil, p.errorf("duplicate member %q", k)
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.errorf("expected ':'")
		}
		p.i++
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if v != nil {
			m[types.String(k)] = v
		} else {
			if nulls == nil {
				nulls = map[string]bool{}
			}
			nulls[k] = true
		}
		if done, err = p.next('}', "an object"); err != nil {
			return nil, err
		}
	}
	return types.NewRecord(m), nil
}

func (p *argParser) array(depth int) (types.Value, error) {
	p.i++ // [
	var vs []types.Value
	for done := p.closes(']'); !done; {
		p.space()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if v != nil {
			vs = append(vs, v)
		}
		if done, err = p.next(']', "an array"); err != nil {
			return nil, err
		}
	}
	return types.NewSet(vs...), nil
}

// closes reads past white space and, if end follows, past it: the object
// or array that end closes is empty.
func (p *argParser) closes(end byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == end {
		p.i++
		return true
	}
	return false
}

// next reads what follows a member of an object or an element of an array
// (what) that end closes: a ',' before the next one (false), or end (true).
func (p *argParser) next(end byte, what string) (bool, error) {
	p.space()
	if p.i >= len(p.b) {
		return false, p.errorf("unexpected end in %s", what)
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return false, nil
	case end:
		p.i++
		return true, nil
	}
	return false, p.errorf("expected ',' or '%c'", end)
}

// str parses a JSON string and returns its value.
func (p *argParser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, nil
		case c == '\\':
			return p.strSlow(start)
		case c < 0x20:
			return "", p.errorf("control character in a string")
		}
		p.i++
	}
	return "", p.errorf("unterminated string")
}

// strSlow decodes a string with escapes, from start (after the quote).
func (p *argParser) strSlow(start int) (string, error) {
	out := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), nil
		case c < 0x20:
			return "", p.errorf("control character in a string")
		case c != '\\':
			out = append(out, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			break
		}
		var ok bool
		if out, p.i, ok = jsonscan.AppendUnescape(out, p.b, p.i); !ok {
			e := p.b[p.i+1]
			p.i += 2
			if e == 'u' {
				return "", p.errorf("invalid \\u escape")
			}
			return "", p.errorf("invalid escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
}

// number scans a JSON number and converts it (see the package's rules).
func (p *argParser) number() (types.Value, error) {
	start := p.i
	neg := false
	if p.b[p.i] == '-' {
		neg = true
		p.i++
	}
	intStart := p.i
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else {
		for p.i < len(p.b) && isDigit(p.b[p.i]) {
			p.i++
		}
	}
	intDigits := p.b[intStart:p.i]
	if len(intDigits) == 0 {
		return nil, p.errorf("invalid number")
	}
	var fracDigits []byte
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		fs := p.i
		for p.i < len(p.b) && isDigit(p.b[p.i]) {
			p.i++
		}
		fracDigits = p.b[fs:p.i]
		if len(fracDigits) == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	exp := 0
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		eneg := false
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			eneg = p.b[p.i] == '-'
			p.i++
		}
		es := p.i
		for p.i < len(p.b) && isDigit(p.b[p.i]) {
			if exp < 100000 { // saturate: such exponents are strings anyway
				exp = exp*10 + int(p.b[p.i]-'0')
			}
			p.i++
		}
		if p.i == es {
			return nil, p.errorf("invalid number")
		}
		if eneg {
			exp = -exp
		}
	}
	lit := string(p.b[start:p.i])
	return numberValue(lit, neg, intDigits, fracDigits, exp), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numberValue converts the parts of a valid JSON number exactly: value =
// digits(int frac) * 10^(exp - len(frac)).
func numberValue(lit string, neg bool, intDigits, fracDigits []byte, exp int) types.Value {
	digits := make([]byte, 0, len(intDigits)+len(fracDigits))
	digits = append(digits, intDigits...)
	digits = append(digits, fracDigits...)
	scale := exp - len(fracDigits)
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return types.Long(0)
	}
	for digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		scale++
	}
	if len(digits) > 19 {
		return types.String(lit)
	}
	m, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil {
		return types.String(lit)
	}
	switch {
	case scale >= 0:
		for range scale {
			if m > math.MaxUint64/10 {
				return types.String(lit)
			}
			m *= 10
		}
		if v, ok := signed(m, neg); ok {
			return types.Long(v)
		}
	case scale >= -4:
		for range 4 + scale { // to ten-thousandths
			if m > math.MaxUint64/10 {
				return types.String(lit)
			}
			m *= 10
		}
		if v, ok := signed(m, neg); ok {
			if d, err := types.NewDecimal(v, -4); err == nil {
				return d
			}
		}
	}
	return types.String(lit)
}

// signed returns ±m as an int64 if it fits.
func signed(m uint64, neg bool) (int64, bool) {
	switch {
	case !neg && m <= math.MaxInt64:
		return int64(m), true
	case neg && m <= 1<<63:
		return int64(-m), true // -(1<<63) wraps to MinInt64, which is right
	}
	return 0, false
}

// argumentFields converts only the named top-level members of a JSON
// object: what policies read of a call's arguments, whatever their size.
// Member names are decoded before they are compared, so an escaped name
// ("dep\u0061rtment") is the name it spells, as the tool will read it. For
// anything but an object it converts everything. b must be valid JSON (the
// runtime's canonical arguments); other input is refused or converted in
// part, never misread as another member.
func argumentFields(b []byte, names []string) (types.Value, error) {
	p := argParser{b: b}
	p.space()
	if p.i == len(b) || b[p.i] != '{' {
		return Arguments(b)
	}
	p.i++
	m := getMap()
	defer putMap(m)
	var seenBuf [8]bool
	var seen []bool // which names were met, to refuse duplicates
	if len(names) <= len(seenBuf) {
		seen = seenBuf[:len(names)]
	} else {
		seen = make([]bool, len(names))
	}
	p.space()
	if p.i < len(b) && b[p.i] == '}' {
		p.i++
	} else {
		for {
			p.space()
			if p.i >= len(b) || b[p.i] != '"' {
				return nil, p.errorf("expected a member name")
			}
			i, err := p.nameIndex(names)
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(b) || b[p.i] != ':' {
				return nil, p.errorf("expected ':'")
			}
			p.i++
			p.space()
			if i >= 0 {
				if seen[i] {
					return nil, p.errorf("duplicate member %q", names[i])
				}
				seen[i] = true
				v, err := p.value(1)
				if err != nil {
					return nil, err
				}
				if v != nil {
					m[types.String(names[i])] = v
				}
			} else if err := p.skip(); err != nil {
				return nil, err
			}
			p.space()
			if p.i < len(b) && b[p.i] == ',' {
				p.i++
				continue
			}
			if p.i >= len(b) || b[p.i] != '}' {
				return nil, p.errorf("expected ',' or '}'")
			}
			p.i++
			break
		}
	}
	p.space()
	if p.i != len(b) {
		return nil, p.errorf("unexpected %q after the value", b[p.i])
	}
	return types.NewRecord(m), nil
}

// nameIndex reads a member name and returns its index in names, or -1. A
// name without escapes is compared in place.
func (p *argParser) nameIndex(names []string) (int, error) {
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			for i, n := range names {
				if string(p.b[start:j]) == n {
					return i, nil
				}
			}
			return -1, nil
		case c == '\\' || c < 0x20:
			k, err := p.str()
			if err != nil {
				return -1, err
			}
			for i, n := range names {
				if k == n {
					return i, nil
				}
			}
			return -1, nil
		}
	}
	return -1, p.errorf("unterminated string")
}

// Records are built in pooled maps: types.NewRecord copies its map.
var mapPool = sync.Pool{New: func() any { return make(types.RecordMap, 8) }}

func getMap() types.RecordMap { return mapPool.Get().(types.RecordMap) }

func putMap(m types.RecordMap) {
	if len(m) > 64 {
		return // let big ones go
	}
	clear(m)
	mapPool.Put(m)
}

// skip passes over one value without converting it, checking only what it
// must to find the value's end: strings, and brackets that balance.
func (p *argParser) skip() error {
	var stack []byte
	for p.i < len(p.b) {
		switch c := p.b[p.i]; c {
		case '"':
			if err := p.skipStr(); err != nil {
				return err
			}
		case '{', '[':
			if len(stack) == maxNesting {
				return p.errorf("nested more than %d deep", maxNesting)
			}
			stack = append(stack, c)
			p.i++
			continue
		case '}', ']':
			if len(stack) == 0 || (c == '}') != (stack[len(stack)-1] == '{') {
				return p.errorf("unexpected %q", c)
			}
			stack = stack[:len(stack)-1]
			p.i++
		default:
			if len(stack) > 0 {
				p.i++
				continue
			}
			start := p.i
			for p.i < len(p.b) && !isDelim(p.b[p.i]) {
				p.i++
			}
			if p.i == start {
				return p.errorf("unexpected %q", c)
			}
		}
		if len(stack) == 0 {
			return nil
		}
	}
	return p.errorf("unexpected end")
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n', '"', '{', '[', ':':
		return true
	}
	return false
}

func (p *argParser) skipStr() error {
	p.i++
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '\\':
			p.i += 2
		case '"':
			p.i++
			return nil
		default:
			p.i++
		}
	}
	return p.errorf("unterminated string")
}
