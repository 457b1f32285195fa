package callgraph

import (
	"bytes"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// KeyHash adds to h the key fields keys of the canonical JSON object obj,
// each as its name and its value as KeyValue gives it: the hash of a keyed
// tool or agent, which may be re-entered with other values of its keys
// only.
func KeyHash(h Hash, keys []string, obj []byte) Hash {
	for _, k := range keys {
		v, _ := Field(obj, k)
		h = h.AddString(k).Sep().Add(KeyValue(v)).Sep()
	}
	return h
}

// SameKey reports whether the canonical JSON objects a and b have the same
// values (as KeyValue compares them) for every one of keys.
func SameKey(keys []string, a, b []byte) bool {
	for _, k := range keys {
		va, _ := Field(a, k)
		vb, _ := Field(b, k)
		if !bytes.Equal(KeyValue(va), KeyValue(vb)) {
			return false
		}
	}
	return true
}

// KeyValues shows the fields keys of the canonical JSON object obj as
// "k=v, k2=v2", each value as its JSON.
func KeyValues(obj []byte, keys []string) string {
	kv := make([]string, 0, len(keys))
	for _, k := range keys {
		v, _ := Field(obj, k)
		kv = append(kv, k+"="+string(v))
	}
	return strings.Join(kv, ", ")
}

// KeyValue is a key field's value as keyed reentrancy compares it: a
// number by its value (7, 7.0, 7e0 and 70e-1 are one key; a schema that
// says integer takes them all), anything else as normalized.
func KeyValue(v []byte) []byte {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return v
	}
	if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return strconv.AppendInt(nil, i, 10) // -0 is 0
	}
	// Exactly, as a rational: 7.0 and 7e0 are 7, 7.5 and 7.50 one key, and
	// two large numbers differ however close they are. A huge exponent is
	// kept as written rather than expanded.
	if len(v) > 64 {
		return v
	}
	if i := bytes.IndexAny(v, "eE"); i >= 0 {
		if e, err := strconv.Atoi(string(v[i+1:])); err != nil || e < -400 || e > 400 {
			return v
		}
	}
	var q big.Rat
	if _, ok := q.SetString(string(v)); !ok {
		return v
	}
	if q.IsInt() {
		return q.Num().Append(nil, 10)
	}
	return []byte(q.RatString())
}

// NormTask is a delegated task as the cycle check compares it: lower
// case, white space collapsed to one space, punctuation and space at
// either end dropped. "Verify the order." and " verify  the ORDER" are one
// task.
func NormTask(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) })
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
