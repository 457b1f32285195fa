package redact

import (
	"cmp"
	"slices"
	"unsafe"
)

// edit replaces b[from:to] of a text by with (by Mask when with is nil).
// Every rule finds edits in the coordinates of the text it was given, so
// that the edits of all rules can be merged, and a text given in pieces can
// be masked as the whole text is.
type edit struct {
	from, to int
	with     []byte
}

func (e edit) replacement() []byte {
	if e.with == nil {
		return mask
	}
	return e.with
}

var mask = []byte(Mask)

// merge sorts eds and merges those that overlap: one inside another is
// dropped (of two over the same bytes, the one found first is kept); two
// that overlap in part become one masking both.
func merge(eds []edit) []edit {
	if len(eds) < 2 {
		return eds
	}
	slices.SortStableFunc(eds, func(a, b edit) int { return cmp.Or(a.from-b.from, b.to-a.to) })
	out := eds[:1]
	for _, e := range eds[1:] {
		last := &out[len(out)-1]
		switch {
		case e.from >= last.to:
			out = append(out, e)
		case e.to > last.to:
			last.to, last.with = e.to, nil
		}
	}
	return out
}

// apply appends b with the merged edits eds made to dst.
func apply(dst, b []byte, eds []edit) []byte {
	return applyRange(dst, b, eds, 0, len(b))
}

// applyRange appends b[start:end] with the merged edits eds made to dst:
// an edit that begins in the range is written whole; what an edit that
// began before start covers of the range is dropped.
func applyRange(dst, b []byte, eds []edit, start, end int) []byte {
	pos := start
	for _, e := range eds {
		if e.to <= pos {
			continue
		}
		if e.from >= end {
			break
		}
		if e.from < start { // begun in an earlier range
			pos = min(e.to, end)
			continue
		}
		dst = append(dst, b[pos:e.from]...)
		dst = append(dst, e.replacement()...)
		pos = min(e.to, end)
		if e.to > end {
			return dst
		}
	}
	if pos < end {
		dst = append(dst, b[pos:end]...)
	}
	return dst
}

// unsafeBytes views s as bytes, for reading it without a copy; they must
// not be written to.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
