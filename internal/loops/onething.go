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
