package loops

import "bytes"

// answerNamesID reports whether a write's answer names what it acted on by
// an identifier: a value under a key that names one (id, entity_id,
// issue_key), as a smart-home intent's {"success": [{"id":
// "light.kitchen"}]} or a tracker's {"key": "SHOP-412"} does, and that
// identifier says again a word of the write's arguments (kitchen, of "the
// kitchen light"): the server resolved the name it was given to that thing.
// Two writes answered with the same such answer, word for word, acted on
// the same thing however their arguments named it. An identifier that
// says none of the arguments' words names where the write put something
// (a cart, a playlist, a hub), not what it was given: items added to one
// cart by name are other writes. An answer too long to read whole names
// nothing here.
func answerNamesID(b, args []byte) bool {
	var buf [32]leaf
	sc := scanLeaves(b, buf[:0], len(buf), false)
	if sc.cut {
		return false
	}
	for i := range sc.out {
		if sc.out[i].id && sc.out[i].kind != leafLiteral && len(sc.out[i].raw) > 0 && echoesWord(sc.out[i].raw, args) {
			return true
		}
	}
	return false
}

// echoesWord reports whether id holds a word of three letters or more
// (split at anything not a letter, case folded) that args hold as a word
// too.
func echoesWord(id, args []byte) bool {
	for i := 0; i < len(id); {
		if !asciiLetter(id[i]) {
			i++
			continue
		}
		j := i
		for j < len(id) && asciiLetter(id[j]) {
			j++
		}
		if j-i >= 3 && holdsWord(args, id[i:j]) {
			return true
		}
		i = j
	}
	return false
}

// holdsWord reports whether b holds w, case folded, as a word of letters.
func holdsWord(b, w []byte) bool {
	for k := 0; k+len(w) <= len(b); k++ {
		if (k == 0 || !asciiLetter(b[k-1])) && bytes.EqualFold(b[k:k+len(w)], w) &&
			(k+len(w) == len(b) || !asciiLetter(b[k+len(w)])) {
			return true
		}
	}
	return false
}

func asciiLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
