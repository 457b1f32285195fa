// Package schema checks a tool's arguments against its JSON Schema (R2):
// Compile and Check, which lists every problem with where it is, what is
// wrong and how to fix it.
//
//	s, err := schema.Compile("refund", raw)
//	problems, err := s.Check(canon) // nil: valid
//
// Check takes a fast path for the schemas tools usually have: objects of
// named properties with primitive types, required fields, enums, bounds
// and patterns (Quick). It checks canonical JSON bytes directly, without
// decoding them into Go values. It only answers "valid" when it is sure;
// anything it does not understand, and every invalid input, goes to the
// full validator, which also writes the error messages.
//
//	q := schema.CompileQuick(raw) // nil when the schema uses more than the subset
//	if q != nil && q.Valid(canon) { /* valid */ } else { /* run the full validator */ }
package schema

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentreach/reach/internal/jsonscan"
)

// Quick is a compiled schema of the supported subset. Immutable and safe
// for concurrent use.
type Quick struct {
	types      uint8 // bit set of jsonType; 0 means any
	props      map[string]*Quick
	required   []string
	noExtra    bool // additionalProperties: false
	items      *Quick
	enum       [][]byte // canonical values
	min, max   *float64
	exMin      *float64
	exMax      *float64
	minLen     int
	maxLen     int // -1: none
	minItems   int
	maxItems   int // -1: none
	pattern    *regexp.Regexp
	hasBounds  bool
	hasStrRule bool
}

const (
	tNull uint8 = 1 << iota
	tBool
	tInt
	tNum
	tStr
	tArr
	tObj
)

var typeBits = map[string]uint8{"null": tNull, "boolean": tBool, "integer": tInt, "number": tNum | tInt,
	"string": tStr, "array": tArr, "object": tObj}

// annotations are keywords that never affect validity. "format" is not one:
// the full validator asserts it under drafts before 2019-09 (a $schema of
// draft-04, -06 or -07, common in MCP tools) and whenever its compiler is
// told to, so a schema with a format is left to it.
var annotations = map[string]bool{"$schema": true, "$id": true, "title": true, "description": true, "default": true,
	"examples": true, "$comment": true, "readOnly": true, "writeOnly": true, "deprecated": true}

// CompileQuick compiles raw if it stays within the subset, else returns nil.
func CompileQuick(raw []byte) *Quick {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // bounds keep their text: see exactFloat
	if d.Decode(&m) != nil {
		return nil
	}
	if _, err := d.Token(); err != io.EOF {
		return nil
	}
	q, ok := compile(m)
	if !ok {
		return nil
	}
	return q
}

func compile(m map[string]any) (*Quick, bool) {
	q := &Quick{maxLen: -1, maxItems: -1}
	for k, v := range m {
		if annotations[k] {
			continue
		}
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				b, ok := typeBits[t]
				if !ok {
					return nil, false
				}
				q.types |= b
			case []any:
				for _, e := range t {
					s, _ := e.(string)
					b, ok := typeBits[s]
					if !ok {
						return nil, false
					}
					q.types |= b
				}
			default:
				return nil, false
			}
		case "properties":
			pm, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			q.props = make(map[string]*Quick, len(pm))
			for name, ps := range pm {
				psm, ok := ps.(map[string]any)
				if !ok {
					return nil, false
				}
				sub, ok := compile(psm)
				if !ok {
					return nil, false
				}
				q.props[name] = sub
			}
		case "required":
			rs, ok := v.([]any)
			if !ok {
				return nil, false
			}
			for _, r := range rs {
				s, ok := r.(string)
				if !ok {
					return nil, false
				}
				q.required = append(q.required, s)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil, false
			}
			q.noExtra = !b
		case "items":
			im, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			sub, ok := compile(im)
			if !ok {
				return nil, false
			}
			q.items = sub
		case "enum":
			es, ok := v.([]any)
			if !ok {
				return nil, false
			}
			for _, e := range es {
				switch e.(type) {
				case string, bool, nil:
				default:
					return nil, false // numbers compare by value, not bytes: leave to the full validator
				}
				b, _ := json.Marshal(e)
				q.enum = append(q.enum, b)
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			n, ok := v.(json.Number)
			if !ok {
				return nil, false
			}
			f, ok := exactFloat(string(n))
			if !ok {
				return nil, false
			}
			q.hasBounds = true
			switch k {
			case "minimum":
				q.min = &f
			case "maximum":
				q.max = &f
			case "exclusiveMinimum":
				q.exMin = &f
			default:
				q.exMax = &f
			}
		case "minLength", "maxLength", "minItems", "maxItems":
			n, ok := v.(json.Number)
			if !ok {
				return nil, false
			}
			// Plain digits only (2.0 and 1e1 are left to the full validator),
			// and no more than any argument could reach.
			u, err := strconv.ParseUint(string(n), 10, 64)
			if err != nil || u > maxLimit {
				return nil, false
			}
			switch k {
			case "minLength":
				q.minLen, q.hasStrRule = int(u), true
			case "maxLength":
				q.maxLen, q.hasStrRule = int(u), true
			case "minItems":
				q.minItems = int(u)
			default:
				q.maxItems = int(u)
			}
		case "pattern":
			s, ok := v.(string)
			if !ok {
				return nil, false
			}
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, false
			}
			q.pattern, q.hasStrRule = re, true
		default:
			return nil, false
		}
	}
	return q, true
}

// Valid reports whether canon (canonical JSON, as from callgraph.Normalize)
// is certainly valid. False means "invalid or unsure": ask the full validator.
func (q *Quick) Valid(canon []byte) bool {
	end, ok := q.check(canon, 0)
	return ok && end == len(canon)
}

// check validates the value at b[i:] and returns the index past it.
func (q *Quick) check(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		if !q.allows(tObj) {
			return i, false
		}
		return q.object(b, i)
	case c == '[':
		if !q.allows(tArr) {
			return i, false
		}
		return q.array(b, i)
	case c == '"':
		end := jsonscan.SkipString(b, i)
		if !q.allows(tStr) {
			return end, false
		}
		return end, q.str(b[i:end])
	case c == 't' || c == 'f':
		end := i + 4
		if c == 'f' {
			end = i + 5
		}
		return end, q.allows(tBool) && q.inEnum(b[i:end])
	case c == 'n':
		return i + 4, q.allows(tNull) && q.inEnum(b[i:i+4])
	default:
		end := i
		for end < len(b) && b[end] != ',' && b[end] != '}' && b[end] != ']' {
			end++
		}
		return end, q.number(b[i:end])
	}
}

func (q *Quick) allows(t uint8) bool { return q.types == 0 || q.types&t != 0 }

func (q *Quick) inEnum(v []byte) bool {
	if q.enum == nil {
		return true
	}
	for _, e := range q.enum {
		if string(e) == string(v) {
			return true
		}
	}
	return false
}

func (q *Quick) object(b []byte, i int) (int, bool) {
	if q.enum != nil {
		return i, false
	}
	start := i
	i++ // '{'
	for i < len(b) && b[i] != '}' {
		keyEnd := jsonscan.SkipString(b, i)
		key := b[i+1 : keyEnd-1]
		for _, c := range key {
			if c == '\\' {
				return i, false // escaped keys: leave to the full validator
			}
		}
		sub := q.props[string(key)]
		if sub == nil && q.noExtra {
			return i, false
		}
		if sub == nil {
			sub = anyValue
		}
		end, ok := sub.check(b, keyEnd+1)
		if !ok {
			return end, false
		}
		i = end
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
	for _, name := range q.required {
		if !hasKey(b[start:i+1], name) {
			return i, false
		}
	}
	return i + 1, true
}

var anyValue = &Quick{maxLen: -1, maxItems: -1}

// hasKey reports whether the canonical object obj has a top-level key name.
func hasKey(obj []byte, name string) bool {
	i := 1
	for i < len(obj) && obj[i] == '"' {
		keyEnd := jsonscan.SkipString(obj, i)
		if string(obj[i+1:keyEnd-1]) == name {
			return true
		}
		i = jsonscan.SkipValue(obj, keyEnd+1) + 1
	}
	return false
}

func (q *Quick) array(b []byte, i int) (int, bool) {
	if q.enum != nil {
		return i, false
	}
	i++ // '['
	n := 0
	item := q.items
	if item == nil {
		item = anyValue
	}
	for i < len(b) && b[i] != ']' {
		end, ok := item.check(b, i)
		if !ok {
			return end, false
		}
		n++
		i = end
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
	if n < q.minItems || (q.maxItems >= 0 && n > q.maxItems) {
		return i, false
	}
	return i + 1, true
}

func (q *Quick) str(tok []byte) bool {
	if !q.inEnum(tok) {
		return false
	}
	if !q.hasStrRule {
		return true
	}
	raw := tok[1 : len(tok)-1]
	for _, c := range raw {
		if c == '\\' {
			return false // escapes: leave to the full validator
		}
	}
	n := utf8.RuneCount(raw)
	if n < q.minLen || (q.maxLen >= 0 && n > q.maxLen) {
		return false
	}
	return q.pattern == nil || q.pattern.Match(raw)
}

func (q *Quick) number(tok []byte) bool {
	if q.enum != nil {
		return false
	}
	isInt := true
	for _, c := range tok {
		if c == '.' || c == 'e' || c == 'E' {
			isInt = false
		}
	}
	if !(q.allows(tNum) || (isInt && q.allows(tInt))) {
		return false // includes 1.0 for "integer": the full validator decides
	}
	if !q.hasBounds {
		return true
	}
	f, ok := exactFloat(string(tok))
	if !ok {
		return false // beyond float precision: let the full validator compare
	}
	switch {
	case q.min != nil && f < *q.min, q.max != nil && f > *q.max,
		q.exMin != nil && f <= *q.exMin, q.exMax != nil && f >= *q.exMax:
		return false
	}
	return true
}

// maxLimit is the largest minLength, maxLength, minItems or maxItems the
// quick path takes; a larger one is left to the full validator.
const maxLimit = math.MaxInt32

// exactFloat parses the JSON number s when float64 orders it exactly against
// any other number it accepts: at most 15 significant digits (so distinct
// decimals stay distinct floats, and rounding keeps their order) and, unless
// zero, a magnitude well inside the normal range (no underflow to 0, no
// overflow to Inf). Otherwise ok is false, and the full validator, which
// compares decimals exactly, decides.
func exactFloat(s string) (f float64, ok bool) {
	mant := s
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
	}
	sig := 0 // significant digits: from the first nonzero digit to the last
	first, last := -1, -1
	for i := 0; i < len(mant); i++ {
		if c := mant[i]; c >= '1' && c <= '9' {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		_, err := strconv.ParseFloat(s, 64)
		return 0, err == nil // a zero, however written
	}
	for i := first; i <= last; i++ {
		if mant[i] != '.' {
			sig++
		}
	}
	if sig > 15 {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if a := math.Abs(f); err != nil || a < 1e-300 || a > 1e300 {
		return 0, false
	}
	return f, true
}
