package callgraph

import (
	"bytes"
	"cmp"
	"hash/maphash"
	"slices"
	"unicode"
	"unicode/utf8"
)

// Twins are two members of one object whose names differ but are the
// same name to encoding/json, which matches a member to a struct field
// with case folded ("path" and "PATH", "kind" and "\u212aind" with the
// Kelvin sign), the last one read winning. Such arguments mean one thing
// to reach, whose checks and policies read names as written, and another
// to a tool that binds them so (a Go server that decodes its arguments
// into a struct with encoding/json): a policy that reads "path" would
// pass a call whose "PATH" the tool runs.
type Twins struct {
	A, B string // as written in the canonical form, without quotes
}

// twins returns the first Twins among the members ms of an object written
// in dst, or nil. Two names that differ but fold alike differ where one of
// them has an upper case letter or a character past ASCII (m.fold).
func twins(dst []byte, ms []member) *Twins {
	name := func(m member) []byte { return dst[m.start+1 : m.start+m.keyLen-1] }
	found := func(a, b member) *Twins { return &Twins{A: string(name(a)), B: string(name(b))} }
	if len(ms) <= 16 {
		// Few names: each pair with one that may fold, most told apart
		// by their lengths.
		for i, a := range ms {
			for _, b := range ms[i+1:] {
				if (a.fold || b.fold) && foldEqual(name(a), name(b)) {
					return found(a, b)
				}
			}
		}
		return nil
	}
	type key struct {
		h uint64
		i int
	}
	keys := make([]key, len(ms))
	var fold [64]byte
	for i, m := range ms {
		keys[i] = key{maphash.Bytes(foldSeed, appendFolded(fold[:0], name(m))), i}
	}
	slices.SortFunc(keys, func(x, y key) int { return cmp.Or(cmp.Compare(x.h, y.h), cmp.Compare(x.i, y.i)) })
	for k := 1; k < len(keys); k++ {
		x, y := keys[k-1], keys[k]
		if x.h == y.h && foldEqual(name(ms[x.i]), name(ms[y.i])) {
			return found(ms[x.i], ms[y.i])
		}
	}
	return nil
}

var foldSeed = maphash.MakeSeed()

// foldEqual reports whether two names are one to encoding/json.
func foldEqual(a, b []byte) bool {
	if nonASCII(a) || nonASCII(b) {
		var fa, fb [64]byte
		return bytes.Equal(appendFolded(fa[:0], a), appendFolded(fb[:0], b))
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func nonASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// mayFold reports whether name has an upper case ASCII letter or a byte
// past ASCII.
func mayFold(name []byte) bool {
	for _, c := range name {
		if 'A' <= c && c <= 'Z' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// appendFolded appends name folded as encoding/json folds a member name to
// match a field: ASCII letters in upper case, any other character the
// smallest of its case-folding orbit.
func appendFolded(dst, name []byte) []byte {
	for i := 0; i < len(name); {
		c := name[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(name[i:])
		for {
			f := unicode.SimpleFold(r)
			if f <= r {
				r = f
				break
			}
			r = f
		}
		dst = utf8.AppendRune(dst, r)
		i += n
	}
	return dst
}

// AppendFolded appends name folded as encoding/json folds a member name to
// match a struct field (see Twins): two names are one field to it when
// their folded forms are equal.
func AppendFolded(dst, name []byte) []byte { return appendFolded(dst, name) }
