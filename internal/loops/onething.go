package loops

import "bytes"

// echoedThings hashes the argument values that name a thing (a word of
// letters and digits, SHOP-412, ch_77; or of four digits or more, a run's
// id) which the error message msg names again, in the arguments' order; 0
// when it names none. A complaint about one thing the calls keep naming,
// whatever else they change ("Transition '31' is not valid for issue
// SHOP-412 in status 'In Review'", then 'Done', then 'Resolve Issue'), is
// one complaint once those other values are masked; a batch names another
// thing each time, and candidates tried one by one (a path, a coupon
// code) are each a thing of their own.
func (d *Detector) echoedThings(msg, args []byte) uint64 { return d.echoedIDs(msg, args, false) }

// echoedIDs is echoedThings; with idOnly, only values under a key that names
// an identifier (issue_key, user_id) count.
func (d *Detector) echoedIDs(msg, args []byte, idOnly bool) uint64 {
	if len(msg) > maxTemplate {
		msg = msg[:maxTemplate]
	}
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0
	}
	h, named := uint64(0x7468696e67), false
	for i := range as.out {
		l := &as.out[i]
		if l.kind != leafString && l.kind != leafNumber || !namesThing(l.raw) || idOnly && !l.id {
			continue
		}
		if j := bytes.Index(msg, l.raw); j >= 0 && wordAt(msg, j, len(l.raw)) {
			h, named = mix(h, mix(hashBytes(l.key), hashBytes(l.raw))), true
		}
	}
	if !named {
		return 0
	}
	return h | 1
}

// namesThing reports whether a value is an id: one word of letters and
// digits (joined by - or _), or of four digits or more.
func namesThing(v []byte) bool {
	if len(v) < 3 || len(v) > 64 {
		return false
	}
	digits, letters := 0, false
	for _, c := range v {
		switch {
		case isDigit(c):
			digits++
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			letters = true
		case c == '-' || c == '_':
		default:
			return false
		}
	}
	return digits > 0 && letters || digits >= 4
}

// wordAt reports whether msg[j:j+n] stands alone as a word.
func wordAt(msg []byte, j, n int) bool {
	return (j == 0 || !isTokenByte(msg[j-1])) && (j+n == len(msg) || !isTokenByte(msg[j+n]))
}

// takenValues hashes, in any order, the argument values that a
// conflict's message names again; 0 when it names none. A value and the
// message's words (runs of letters, digits, - and _) are compared as
// their letters and digits, case folded (F-7, f7 and "F7 " are the word
// F7 of ["F7","F8"] unavailable; R2-7 is R2-7, not R2). A
// conflict is about what the call asked for: a seat, a slot, a name
// already taken. Other seats asked and refused alike, each named, are a
// search for a free one, not one complaint (TestConflictNamesTaken); the
// same seats asked in other spellings or another order are named alike,
// and a conflict that names none of the call's values (a tank occupied by
// another batch) stays one complaint whatever the call changes.
func (d *Detector) takenValues(msg, args []byte) uint64 {
	if len(msg) > maxTemplate {
		msg = msg[:maxTemplate]
	}
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0
	}
	var h uint64
	for i := range as.out {
		l := &as.out[i]
		if l.kind != leafString && l.kind != leafNumber || len(l.raw) > 64 {
			continue
		}
		var buf [64]byte
		v := alnumFold(buf[:0], l.raw)
		if len(v) >= 2 && namesWord(msg, v) {
			h += hashBytes(v) // a sum: the order the call listed them in says nothing
		}
	}
	if h == 0 {
		return 0
	}
	return h | 1
}

// alnumFold appends the letters and digits of v to b, lower-cased (a
// byte of a character beyond ASCII as it is).
func alnumFold(b, v []byte) []byte {
	for _, c := range v {
		switch {
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		case 'a' <= c && c <= 'z', isDigit(c), c >= 0x80:
			b = append(b, c)
		}
	}
	return b
}

// namesWord reports whether msg holds a word (a run of letters, digits,
// - and _) whose letters and digits, case folded, are w.
func namesWord(msg, w []byte) bool {
	for i := 0; i < len(msg); {
		if !isTokenByte(msg[i]) && msg[i] != '-' {
			i++
			continue
		}
		j, k := i, 0
		match := true
		for ; j < len(msg) && (isTokenByte(msg[j]) || msg[j] == '-'); j++ {
			c := msg[j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c == '-' || c == '_' {
				continue
			}
			if k >= len(w) || w[k] != c {
				match = false
			}
			k++
		}
		if match && k == len(w) {
			return true
		}
		i = j
	}
	return false
}
