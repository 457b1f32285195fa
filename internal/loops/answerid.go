package loops

// answerNamesID reports whether a write's answer names what it acted on by
// an identifier: a value under a key that names one (id, entity_id,
// issue_key), as a smart-home intent's {"success": [{"id":
// "light.kitchen"}]} or a tracker's {"key": "SHOP-412"} does. Two writes
// answered with the same such answer, word for word, acted on the same
// thing however their arguments named it. An answer too long to read whole
// names nothing here.
func answerNamesID(b []byte) bool {
	var buf [32]leaf
	sc := scanLeaves(b, buf[:0], len(buf), false)
	if sc.cut {
		return false
	}
	for i := range sc.out {
		if sc.out[i].id && sc.out[i].kind != leafLiteral && len(sc.out[i].raw) > 0 {
			return true
		}
	}
	return false
}
