package redact

import (
	"bytes"
	"encoding/binary"
)

// A registered value is looked for in every form it takes (escaped,
// percent-encoded, in base64 at three offsets and in two alphabets): with
// many values, a text is scanned once for each form, 50 values some 400
// times. Past indexMin forms, a set scans a text once instead: a 4-byte
// window is hashed at each place, and only where it may begin a form are
// the forms that begin with it compared.

// indexMin is the number of forms from which a set is indexed: below it,
// a scan for each form (a search for its first byte, vectorized) is the
// faster.
const indexMin = 16

// formIndex is the forms of a set by their first four bytes.
type formIndex struct {
	forms [][]byte            // every form, in the order valueEdits looks for them
	heads map[uint32][]uint16 // first four bytes -> forms that begin with them
	bits  [1 << 16 / 64]uint64
	// may is what mayMask looks for: the first four bytes of each form,
	// and the second four of each in base64 (a form a line break cuts
	// early begins on the next line).
	may     map[uint32]bool
	mayBits [1 << 16 / 64]uint64
	short   map[string]bool // the first 1, 2 and 3 bytes of each form (see held)
	longest int             // the longest form's length
}

func window(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

func slot(w uint32) uint32 { return (w * 0x9E3779B1) >> 16 }

func mark(bits *[1 << 16 / 64]uint64, w uint32) { s := slot(w); bits[s/64] |= 1 << (s % 64) }

func marked(bits *[1 << 16 / 64]uint64, w uint32) bool {
	s := slot(w)
	return bits[s/64]&(1<<(s%64)) != 0
}

// newIndex returns the index of secs' forms, or nil when they are too few
// to need one (or too many to number).
func newIndex(secs []secret) *formIndex {
	n := 0
	for _, s := range secs {
		n += len(s.forms)
	}
	if n < indexMin || n > 1<<16 {
		return nil
	}
	ix := &formIndex{heads: make(map[uint32][]uint16), may: make(map[uint32]bool), short: make(map[string]bool)}
	for _, s := range secs {
		for _, f := range s.forms {
			for n := 1; n < MinSecretLen; n++ {
				ix.short[string(f[:n])] = true
			}
			ix.longest = max(ix.longest, len(f))
			w := window(f)
			ix.heads[w] = append(ix.heads[w], uint16(len(ix.forms)))
			ix.forms = append(ix.forms, f)
			mark(&ix.bits, w)
			ix.may[w] = true
			mark(&ix.mayBits, w)
		}
		for _, f := range s.b64 {
			w := window(f[MinSecretLen:])
			ix.may[w] = true
			mark(&ix.mayBits, w)
		}
	}
	return ix
}

// mayHold reports whether b holds what mayMask looks for.
func (ix *formIndex) mayHold(b []byte) bool {
	for i := 0; i+MinSecretLen <= len(b); i++ {
		if w := window(b[i:]); marked(&ix.mayBits, w) && ix.may[w] {
			return true
		}
	}
	return false
}

// edits appends the edits that mask every form in b, as a scan for each
// form in turn would find them: for each form, its occurrences from the
// left, none overlapping another of the same form.
func (ix *formIndex) edits(eds []edit, b []byte) []edit {
	var next []int // per form, where its next occurrence may begin; made at the first
	for i := 0; i+MinSecretLen <= len(b); i++ {
		w := window(b[i:])
		if !marked(&ix.bits, w) {
			continue
		}
		for _, k := range ix.heads[w] {
			f := ix.forms[k]
			if (next != nil && i < next[k]) || !bytes.HasPrefix(b[i:], f) {
				continue
			}
			if next == nil {
				next = make([]int, len(ix.forms))
			}
			eds = append(eds, edit{from: i, to: i + len(f)})
			next[k] = i + len(f)
		}
	}
	return eds
}

// held returns where, in text, a Stream cuts what it holds back: before
// the longest end of text that begins a form (and is not one whole), then
// before any form that the cut splits, as a scan for each form does.
func (ix *formIndex) held(text []byte) int {
	cut := len(text)
	for j := max(0, len(text)-ix.longest+1); j < len(text); j++ {
		if ix.begins(text[j:]) {
			cut = j
			break
		}
	}
	for moved := true; moved; {
		moved = false
		for i := max(0, cut-ix.longest+1); i < cut && i+MinSecretLen <= len(text); i++ {
			w := window(text[i:])
			if !marked(&ix.bits, w) {
				continue
			}
			for _, k := range ix.heads[w] {
				if f := ix.forms[k]; i+len(f) > cut && bytes.HasPrefix(text[i:], f) {
					cut, moved = i, true
					break
				}
			}
			if moved {
				break
			}
		}
	}
	return cut
}

// begins reports whether s is the beginning of a form, shorter than it.
func (ix *formIndex) begins(s []byte) bool {
	if len(s) < MinSecretLen {
		return ix.short[string(s)]
	}
	w := window(s)
	if !marked(&ix.bits, w) {
		return false
	}
	for _, k := range ix.heads[w] {
		if f := ix.forms[k]; len(f) > len(s) && bytes.HasPrefix(f, s) {
			return true
		}
	}
	return false
}
