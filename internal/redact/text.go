package redact

import (
	"bytes"
	"encoding/json"
	"iter"
	"slices"

	"github.com/agentreach/reach/internal/jsonscan"
	"github.com/agentreach/reach/internal/strview"
)

// maxDepth bounds how many times text that is an escaped JSON string is
// read unescaped inside itself.
const maxDepth = 16

// mayMask is a quick test: could the rules change b? Only if it holds the
// start of a registered value (or, with a line break, of the rest of one
// in base64), a backslash (an escaped form of one), a percent-encoding or
// a character reference that spells a byte of one, or
// (with full rules) the stem of a secret name.
func (r *Redactor) mayMask(b []byte, set *secretSet, full bool) bool {
	if len(set.secs) > 0 || full {
		if bytes.IndexByte(b, '\\') >= 0 {
			return true
		}
	}
	if len(set.secs) > 0 && (bytes.IndexByte(b, '%') >= 0 || bytes.IndexByte(b, '&') >= 0) {
		// A percent-encoding or a character reference that spells a byte
		// of a value's (not a URL's %20 or &amp; where none has a space
		// or an ampersand).
		if spells, _ := set.escapesIn(b); spells {
			return true
		}
	}
	if set.idx != nil {
		if set.idx.mayHold(b) {
			return true
		}
		return full && r.keys.mayHold(b)
	}
	for _, s := range set.secs {
		for _, f := range s.forms {
			if bytes.Contains(b, f[:MinSecretLen]) {
				return true
			}
		}
	}
	// A form in base64 that a line break cuts after its first bytes begins
	// on the next line: what follows them is looked for too.
	if bytes.IndexByte(b, '\n') >= 0 {
		for _, s := range set.secs {
			for _, f := range s.b64 {
				if bytes.Contains(b, f[MinSecretLen:2*MinSecretLen]) {
					return true
				}
			}
		}
	}
	return full && r.keys.mayHold(b)
}

// text appends b with its secrets masked to dst and reports whether
// anything was masked; if not, it returns b itself.
func (r *Redactor) text(dst, b []byte, set *secretSet, full bool, depth int) ([]byte, bool) {
	eds := r.textEdits(nil, b, set, full, depth)
	if len(eds) == 0 {
		return b, false
	}
	return apply(dst, b, merge(eds)), true
}

// textEdits appends the edits that mask the secrets of the text b.
func (r *Redactor) textEdits(eds []edit, b []byte, set *secretSet, full bool, depth int) []edit {
	if len(b) == 0 {
		return eds
	}
	viewed := false
	if depth < maxDepth && bytes.IndexByte(b, '\\') >= 0 {
		// Text that is an escaped JSON string ({\"password\":[\"...\"]})
		// is masked as the text it stands for; with the values alone too,
		// as a value one spells escaped (\u00f6) is still the value.
		if !full && hasControl(b) {
			// A text of lines (a model's answer with code in it) is no
			// escaped string, and is not written anew as one: its line
			// breaks would come back as \n. A value it spells escaped is
			// masked where it is.
			eds, viewed = escapedEdits(eds, b, set, true), true
		} else if u, ok := appendUnescaped(nil, b); ok {
			if out, changed := r.text(nil, u, set, full, depth+1); changed {
				return append(eds, edit{0, len(b), jsonscan.AppendEscaped(nil, strview.Of(out))})
			}
		}
	}
	// First: where a value is masked as JSON and by another rule, JSON's
	// mask is kept. With the values alone too: a tool call's arguments in
	// a model's answer are a JSON document in a string, in which a value
	// may be spelled escaped (Passw\u00f6rt, as Python's json.dumps does).
	eds, docs := r.embeddedJSON(eds, b, set, full, depth)
	eds = valueEdits(eds, b, set, true)
	if !viewed && len(set.secs) > 0 {
		// A value spelled with escapes where the text is no JSON string
		// (a quote in it), percent-encoded or with HTML's character
		// references, every byte or some, in either case (spell.go).
		eds = escapedEdits(eds, b, set, true)
	}
	if full && (r.keys.mayHold(b) || bytes.IndexByte(b, '\\') >= 0) {
		eds = r.pairEdits(eds, b, docs)
		eds = schemeEdits(eds, b)
	}
	return eds
}

// maxEmbedded bounds how many places that may begin a JSON document one
// text is tried at, so that a text of many brackets costs linear time.
const maxEmbedded = 32

// embeddedJSON masks the JSON documents inside the text b (an object or
// array whose first member is a string, or an object), as JSON, and
// returns where they are.
func (r *Redactor) embeddedJSON(eds []edit, b []byte, set *secretSet, full bool, depth int) ([]edit, [][2]int) {
	var docs [][2]int
	tries := 0
	for i := 0; i < len(b) && tries < maxEmbedded; i++ {
		if n := bytes.IndexAny(b[i:], "{["); n < 0 {
			break
		} else {
			i += n
		}
		if k := jsonscan.SkipSpace(b, i+1); k >= len(b) || (b[k] != '"' && (b[i] != '[' || (b[k] != '{' && b[k] != '['))) {
			continue
		}
		tries++
		j := jsonscan.SkipValue(b, i)
		if !json.Valid(b[i:j]) {
			continue
		}
		eds = r.jsonEdits(eds, b[i:j], i, set, full, depth+1)
		docs = append(docs, [2]int{i, j})
		i = j - 1
	}
	return eds, docs
}

// valueEdits masks the registered values in b, in every form, and, if b
// is the end of its text, a start of one at the very end of b (a text cut
// in the middle of a secret) when it gives away enough of it: at least 8
// bytes, or half.
func valueEdits(eds []edit, b []byte, set *secretSet, end bool) []edit {
	if set.idx != nil {
		eds = set.idx.edits(eds, b)
	} else {
		for _, s := range set.secs {
			for _, f := range s.forms {
				for i := range occurrences(b, f) {
					eds = append(eds, edit{from: i, to: i + len(f)})
				}
			}
		}
	}
	eds = wrappedEdits(eds, b, set)
	if !end || len(b) < MinSecretLen {
		return eds
	}
	last := b[len(b)-1]
	for _, s := range set.secs {
	forms:
		for _, f := range s.forms {
			for l := len(f) - 1; l >= MinSecretLen; l-- {
				if f[l-1] == last && cutGives(l, len(s.raw)) && bytes.HasSuffix(b, f[:l]) {
					eds = append(eds, edit{from: len(b) - l, to: len(b)})
					break forms
				}
			}
		}
	}
	return eds
}

// occurrences yields where f begins in b, each occurrence after the end
// of the one before.
func occurrences(b, f []byte) iter.Seq[int] {
	return func(yield func(int) bool) {
		for off := 0; ; {
			i := bytes.Index(b[off:], f)
			if i < 0 || !yield(off+i) {
				return
			}
			off += i + len(f)
		}
	}
}

// wrappedEdits masks the registered values in base64 wrapped in lines, as
// MIME wraps it (76 columns) and PEM (64): a form that a line break cuts is
// not found whole in b. Lines of base64 alphabet only (indented or not, as
// in a YAML file) that follow each other are read joined, and a form found
// across a break is masked with the break.
func wrappedEdits(eds []edit, b []byte, set *secretSet) []edit {
	if bytes.IndexByte(b, '\n') < 0 || !slices.ContainsFunc(set.secs, func(s secret) bool { return len(s.b64) > 0 }) {
		return eds
	}
	var joined []byte
	var at []int // where in b each byte of joined is
	lines := 0
	flush := func() {
		if lines >= 2 {
			for _, s := range set.secs {
				for _, f := range s.b64 {
					for i := range occurrences(joined, f) {
						from, to := at[i], at[i+len(f)-1]+1
						if to-from > len(f) { // across a break: not found whole
							eds = append(eds, edit{from: from, to: to})
						}
					}
				}
			}
		}
		joined, at, lines = joined[:0], at[:0], 0
	}
	for start := 0; start < len(b); {
		end := bytes.IndexByte(b[start:], '\n')
		if end < 0 {
			end = len(b)
		} else {
			end += start
		}
		line := bytes.TrimRight(b[start:end], " \t\r")
		indent := len(line) - len(bytes.TrimLeft(line, " \t"))
		if line = line[indent:]; len(line) == 0 || !isBase64(line) {
			flush()
		} else {
			for i := range line {
				at = append(at, start+indent+i)
			}
			joined = append(joined, line...)
			lines++
		}
		start = end + 1
	}
	flush()
	return eds
}

// isBase64 reports whether b is of the characters of base64 alone (both
// alphabets, with padding).
func isBase64(b []byte) bool {
	for _, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_' || c == '=') {
			return false
		}
	}
	return true
}

// cutGives reports whether the first n bytes of a secret of size bytes
// give away enough of it to be masked where a text ends with them.
func cutGives(n, size int) bool { return n >= MinSecretLen && (n >= 8 || 2*n >= size) }

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// escaped reports whether b[i] is the letter of an escape such as \n in
// text that holds a JSON string: it ends a word rather than starts one.
func escaped(b []byte, i int) bool { return i > 0 && b[i-1] == '\\' }

// pairEdits masks the values of "name: value" and "name=value" pairs whose
// name is secret. The name may be quoted, and escaped (\"name\"); the value
// is a quoted string (quoted as the name is, or not), an array or object
// (masked whole, as one string), or a word, up to a space or one of
// ,;&)]}"' ("Bearer x", "Basic x" taken whole).
func (r *Redactor) pairEdits(eds []edit, b []byte, docs [][2]int) []edit {
	for i := 0; i < len(b); i++ {
		if len(docs) > 0 && i >= docs[0][0] {
			i = docs[0][1] - 1 // masked as JSON
			docs = docs[1:]
			continue
		}
		if b[i] != ':' && b[i] != '=' {
			continue
		}
		// The name: a word before the separator, maybe spaced, maybe quoted.
		k := i
		for k > 0 && (b[k-1] == ' ' || b[k-1] == '\t') {
			k--
		}
		qe := k
		for k > 0 && (b[k-1] == '"' || b[k-1] == '\'' || b[k-1] == '\\') {
			k--
		}
		quote := quoteOf(b[k:qe])
		end := k
		for k > 0 && isWordByte(b[k-1]) {
			k--
		}
		if k == end {
			continue
		}
		secret, count := r.keys.match(b[k:end])
		if !secret && escaped(b, k) && k+1 < end {
			secret, count = r.keys.match(b[k+1 : end]) // after an escape such as \n
		}
		if !secret {
			continue
		}
		v := i + 1
		for v < len(b) && (b[v] == ' ' || b[v] == '\t') {
			v++
		}
		if v >= len(b) || b[v] == '=' { // nothing, or "==" / ":="
			continue
		}
		if r.keys.onlyJWT(b[k:end]) && !credentialLike(wordAt(b, v)) {
			continue // "jwt: reading the key set", not a token
		}
		var ve int
		eds, ve = valueEdit(eds, b, v, quote, count)
		i = max(i, ve-1)
	}
	return eds
}

// quoteOf returns the quote of a name from the run of quotes and
// backslashes that closes it: `"`, `'`, or `\"` (`\\\"`, ...) for a name
// quoted inside a JSON string; nil if it is not quoted.
func quoteOf(run []byte) []byte {
	for i, c := range run {
		if c == '"' || c == '\'' {
			n := 0 // the backslashes before it
			for j := i - 1; j >= 0 && run[j] == '\\'; j-- {
				n++
			}
			return run[i-n : i+1]
		}
	}
	return nil
}

// valueEdit masks the value of a secret pair that starts at b[v] and
// returns the index past it.
func valueEdit(eds []edit, b []byte, v int, quote []byte, count bool) ([]edit, int) {
	// A quoted value: a run of backslashes, then " or '.
	q := v
	for q < len(b) && b[q] == '\\' {
		q++
	}
	if q < len(b) && (b[q] == '"' || b[q] == '\'') {
		nb := q - v
		in := q + 1
		end := closingQuote(b, in, b[q], nb)
		ie := max(end-nb, in) // the value ends before the closing quote's backslashes
		if end == len(b) {
			ie = len(b) // not closed: mask to the end
		}
		if ie > in && string(b[in:ie]) != Mask {
			eds = append(eds, edit{from: in, to: ie})
		}
		return eds, min(end+1, len(b))
	}
	if b[v] == '[' || b[v] == '{' {
		nb := -1
		if quote != nil {
			nb = len(quote) - 1
		}
		end := closingBracket(b, v, max(nb, 0))
		if string(b[v:end]) == Mask {
			return eds, end
		}
		var with []byte
		if quote != nil {
			with = make([]byte, 0, 2*len(quote)+len(Mask))
			with = append(append(append(with, quote...), Mask...), quote...)
		}
		return append(eds, edit{from: v, to: end, with: with}), end
	}
	e := bareEnd(b, v)
	if scheme := b[v:e]; equalFold(scheme, "bearer") || equalFold(scheme, "basic") || equalFold(scheme, "token") || equalFold(scheme, "digest") {
		if n := jsonscan.SkipSpace(b, e); n > e && n < len(b) {
			e = bareEnd(b, n)
		}
	}
	if e > v && !(count && isNumber(b[v:e])) && string(b[v:e]) != Mask {
		eds = append(eds, edit{from: v, to: e})
	}
	return eds, e
}

// closingQuote returns the index of the quote q that closes a string
// quoted with nb backslashes before it, starting the search at b[i]: the
// next q with exactly nb backslashes before it; len(b) if there is none.
func closingQuote(b []byte, i int, q byte, nb int) int {
	for ; i < len(b); i++ {
		if b[i] == q && backslashesBefore(b, i) == nb {
			return i
		}
	}
	return len(b)
}

func backslashesBefore(b []byte, i int) int {
	n := 0
	for i > 0 && b[i-1] == '\\' {
		n++
		i--
	}
	return n
}

// closingBracket returns the index past the array or object that starts
// at b[v], its strings quoted with nb backslashes; len(b) if it does not
// close.
func closingBracket(b []byte, v, nb int) int {
	depth := 0
	in := false
	for i := v; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			if backslashesBefore(b, i) == nb {
				in = !in
			}
		case in:
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return len(b)
}

func bareEnd(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n', ',', ';', '&', ')', ']', '}', '"', '\'':
			return i
		}
		i++
	}
	return i
}

// equalFold reports whether b is word in any case (word is lower-case).
func equalFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return false
		}
	}
	return true
}

// schemeEdits masks the credential after "Bearer", and after "Basic" or
// "token" when it looks like one (a word is left: "basic plan", "one token
// each").
func schemeEdits(eds []edit, b []byte) []edit {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != 'b' && c != 'B' && c != 't' && c != 'T' {
			continue
		}
		if i > 0 && isWordByte(b[i-1]) && !escaped(b, i-1) {
			continue
		}
		var n int
		switch {
		case i+6 <= len(b) && equalFold(b[i:i+6], "bearer"):
			n = 6
		case i+5 <= len(b) && (equalFold(b[i:i+5], "basic") || equalFold(b[i:i+5], "token")):
			n = 5
		default:
			continue
		}
		if i+n >= len(b) || (b[i+n] != ' ' && b[i+n] != '\t') {
			continue
		}
		v := jsonscan.SkipSpace(b, i+n)
		e := bareEnd(b, v)
		if tok := b[v:e]; e > v && string(tok) != Mask && (n == 6 || (len(tok) >= 8 && credentialLike(tok))) {
			eds = append(eds, edit{from: v, to: e})
		}
		i = max(i, e-1)
	}
	return eds
}

// wordAt returns the word that begins at b[v], after the quotes and
// backslashes that open it: up to a space, a quote, a backslash or one of
// ,;)]}.
func wordAt(b []byte, v int) []byte {
	for v < len(b) && (b[v] == '"' || b[v] == '\'' || b[v] == '\\') {
		v++
	}
	e := v
	for e < len(b) && !wordEnd(b[e]) {
		e++
	}
	return b[v:e]
}

func wordEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '"', '\'', '\\', ',', ';', ')', ']', '}':
		return true
	}
	return false
}

// credentialLike reports whether a word looks like a credential rather
// than a word: it has a digit or one of -._~+/=, or capitals past its
// first letter along with small letters (base64).
func credentialLike(tok []byte) bool {
	upper, lower := false, false
	for i, c := range tok {
		switch {
		case '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~', c == '+', c == '/', c == '=':
			return true
		case 'A' <= c && c <= 'Z':
			upper = upper || i > 0
		case 'a' <= c && c <= 'z':
			lower = true
		}
	}
	return upper && lower
}

// isNumber reports whether b is a JSON number.
func isNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if digits() == 0 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// hasControl reports whether b holds a control character, which the inside
// of a JSON string never holds raw.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// appendUnescaped reads b as the inside of a JSON string (raw control
// characters allowed) and appends what it stands for to out; false if b is
// not one (a quote that is not escaped, an unknown escape).
func appendUnescaped(out, b []byte) ([]byte, bool) {
	for i := 0; i < len(b); {
		switch b[i] {
		case '"':
			return nil, false
		case '\\':
			var ok bool
			if out, i, ok = jsonscan.AppendUnescape(out, b, i); !ok {
				return nil, false
			}
		default:
			out = append(out, b[i])
			i++
		}
	}
	return out, true
}
