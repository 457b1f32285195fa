package loops

// expressionKey returns the hash of an answer's key k (hashed kh) that is
// an expression, holding a bracket (a SQL column labelled as the query
// wrote it: COUNT(*), count( * ), Sum(total)), in lower case and without
// its spaces: the query respelled in case and spacing answers the same
// column under its own spelling, and the answer is the same. Other keys
// (and keys longer than 64 bytes) are returned as they are, kh.
func expressionKey(k []byte, kh uint64) uint64 {
	if len(k) > 64 {
		return kh
	}
	paren := false
	for _, c := range k {
		paren = paren || c == '('
	}
	if !paren {
		return kh
	}
	var buf [64]byte
	b := buf[:0]
	for _, c := range k {
		switch {
		case c == ' ' || c == '\t':
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	return hashBytes(b)
}

// patternKey reports whether an argument's key names a pattern (pattern,
// filePattern, glob, regex): a file search's pattern matches names that
// hold it, a star or not.
func patternKey(k []byte) bool {
	var w keyWords
	switch string(w.last(k)) {
	case "pattern", "glob", "regex", "regexp":
		return true
	}
	return false
}

// globWord reports whether string v (its JSON escapes as written) under a
// key that names a pattern is one without a star nor a space, a dot or a
// slash in it or not (.env, env, config.yaml): the same words matched as
// *.env or **/.env* name the same files, so it is read as they are, the
// multiset of its words (patternFold).
func globWord(v []byte) bool {
	if len(v) == 0 || len(v) > 128 {
		return false
	}
	letter := false
	for _, c := range v {
		switch {
		case c == ' ' || c == '\\':
			return false
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			letter = true
		}
	}
	return letter
}

// glob starts a value over with pattern v as the multiset of its words,
// as str does a glob with a star.
func (f *folder) glob(v []byte) {
	f.q, f.n = 0x737472, 0
	f.byte('*')
	f.word(patternFold(v))
}

// refFold is a write's arguments (their leaves, as) without the words
// that describe the element it acts on, its ref kept: one element by the
// ref a page gave it, described otherwise at each click ("Place order
// button", then "the order submit button"), while the page answered
// alike, so kept its refs, is the one write made again
// (checkWriteRespelled). Another element has another ref. A value under a
// key that names it (valueKey) is what the write writes, letters alone or
// not, and stays: a dropdown's other option is another write.
func refFold(tool string, as []leaf) uint64 {
	sum := uint64(0)
	for i := range as {
		l := &as[i]
		if l.kind == leafString && !refKey(l.key) && !valueKey(l.key) && len(l.raw) > 0 && describes(l.key, l.raw) {
			continue
		}
		sum += mix(l.path, respelled(l.raw, l.val))
	}
	return mix(hashString(tool), sum) | 1
}

// sameWrite reports whether entry e made write s again: its arguments
// respelled, or, for a write that names a ref and describes it, the same
// ref and the same other values, described in other words.
func sameWrite(e *entry, s *Step) bool {
	return e.fold == s.fold || s.refFold != 0 && e.refFold == s.refFold
}

// valueKey reports whether an argument's key names the value a write
// sets (value, values, option, options, choice): a dropdown's option, a
// field's new value, which another click or fill of one ref changes.
func valueKey(k []byte) bool {
	var w keyWords
	switch string(w.last(k)) {
	case "value", "values", "option", "options", "choice", "choices":
		return true
	}
	return false
}
