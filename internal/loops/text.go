package loops

import (
	"bytes"
	"slices"
	"unicode"
	"unicode/utf8"
)

// This file is the package's text normalizer: it tells free text (a query, a
// task, a verdict) from code and identifiers, cuts it into content words, and
// compares two texts by the words they share. It is deterministic and small:
// words are runs of letters and digits, lower-cased, with a few English
// suffixes stripped; text in a script written without spaces (Chinese,
// Japanese, Korean) is cut into overlapping pairs of characters; a short
// list of English function words is dropped. It knows no synonyms: a
// rewording that shares no word with the original is not recognized.

const maxWords = 48 // words kept of one text

// isCJK reports whether r belongs to a script written without spaces
// between words.
func isCJK(r rune) bool {
	if r < 0x1100 { // below Hangul Jamo: Latin, Greek, Cyrillic, ...
		return false
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// isLetter is unicode.IsLetter with a fast path for ASCII.
func isLetter(r rune) bool {
	if r < 0x80 {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

// proseArg reports whether an argument value (a JSON string's content as
// written) under key is natural-language text, such as a search query,
// rather than an identifier, a name, a path, a command or code. The value
// must be mostly letters, with none of the characters or shapes of code
// (slashes, operators, brackets, underscores, "a.b", "-flag"), and not
// under a key that names code (command, sql, path, url, pattern, ...).
// Under a key that names a query (query, q, question, keywords, ...), two
// words or two CJK characters are prose; under any other key it takes
// three words or five CJK characters (a city, a person's name or a title is
// not a question). When unsure it says no: a value that is not prose is
// compared exactly.
func proseArg(key, b []byte) bool {
	kind := keyKind(key)
	if kind == codeKey {
		return false
	}
	words, cjk, ok := proseShape(b)
	if !ok {
		return kind == queryKey && searchSyntax(b)
	}
	if kind == queryKey {
		return words >= 2 || cjk >= 2
	}
	return words >= 3 || cjk >= 5
}

// searchSyntax reports whether a query is written in a search engine's
// syntax (a mailbox's, an issue tracker's, a log store's): two terms or
// more, one of them an operator and its value (from:billing@acme.io,
// is:open, level:error), none with the characters of code or of a
// comparison (SQL's =, a shell's |). It is reworded as prose is: its
// operators and words in other orders and spellings ask one question.
func searchSyntax(b []byte) bool {
	if len(b) > 512 || bytes.ContainsAny(b, "=<>{}|$`;") {
		return false
	}
	// A quoted phrase (subject:"overdue invoice") is written \" in the
	// JSON; any other escape is code's.
	for r := b; ; {
		i := bytes.IndexByte(r, '\\')
		if i < 0 {
			break
		}
		if i+1 == len(r) || r[i+1] != '"' {
			return false
		}
		r = r[i+2:]
	}
	terms, ops := 0, 0
	for i := 0; i < len(b); {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		if i == len(b) {
			break
		}
		j := i
		for j < len(b) && b[j] != ' ' && b[j] != '\t' {
			j++
		}
		terms++
		t := b[i:j]
		if k := bytes.IndexByte(t, ':'); k > 0 && k+1 < len(t) && t[k+1] != ':' && t[k+1] != '/' {
			op := true
			for _, c := range t[:k] {
				op = op && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-')
			}
			if op {
				ops++
			}
		} else if i > 0 && j < len(b) && proximity(t) {
			// An operator stands between the terms it joins.
			ops++
		}
		i = j
	}
	return terms >= 2 && ops >= 1
}

// proximity reports whether a query's term is a proximity operator of a
// search engine (w/5, NEAR/10, PRE/3: a word of one to five letters, a
// slash, and how many words apart), as legal and patent searches write
// them: the query is written in a search engine's syntax, reworded as
// prose is, not a path (TestProximityQuery). A path (src/lib, v1/users)
// has no term of that shape, and one that looked like it would have to
// stand between two other terms, as an operator does.
func proximity(t []byte) bool {
	k := bytes.IndexByte(t, '/')
	if k < 1 || k > 5 || len(t)-k-1 < 1 || len(t)-k-1 > 3 {
		return false
	}
	for _, c := range t[:k] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	for _, c := range t[k+1:] {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

const (
	otherKey = iota
	queryKey
	codeKey
)

// keyKind says whether an argument's key names a query, code, or neither.
func keyKind(k []byte) int {
	var w keyWords
	w.split(k)
	kind := otherKey
	for i := range w.n {
		switch string(w.word(i)) {
		case "command", "cmd", "script", "code", "sql", "shell", "exec", "args", "argv", "path", "file",
			"filename", "url", "uri", "pattern", "regex", "regexp", "expr", "expression", "selector",
			"filter", "jq", "xpath", "glob", "program", "source", "patch", "diff":
			return codeKey
		case "query", "q", "question", "search", "keywords", "keyword", "terms", "term", "topic",
			"prompt", "ask", "phrase", "utterance", "input":
			kind = queryKey
		}
	}
	return kind
}

// proseShape counts the words (with a letter) and the longest run of CJK
// characters of a value, and says whether its shape is that of text.
func proseShape(b []byte) (words, cjkRun int, ok bool) {
	if len(b) < 2 || len(b) > 512 {
		return 0, 0, false
	}
	letters, other, run := 0, 0, 0
	inWord, wordHasLetter := false, false
	var prev rune
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return 0, 0, false
		}
		next := rune(0)
		if i+n < len(b) {
			next, _ = utf8.DecodeRune(b[i+n:])
		}
		i += n
		switch {
		case r == '\\':
			// An escape: a written quote or new line is fine in a query;
			// anything else (a path, a regular expression) is not.
			if next != '"' && next != 'n' {
				return 0, 0, false
			}
		case r == ' ' || r == '\t':
			if inWord && wordHasLetter {
				words++
			}
			inWord, wordHasLetter, run, prev = false, false, 0, r
			continue
		case r < 0x80 && isCodeByte(byte(r)):
			return 0, 0, false
		case r == '-' && !inWord:
			return 0, 0, false // a command-line flag
		case (r == '.' || r == ':') && isAlnum(prev) && isAlnum(next):
			return 0, 0, false // file.ext, os.path, http:, a:b
		}
		if isLetter(r) {
			letters++
			wordHasLetter = true
			if isCJK(r) {
				run++
				cjkRun = max(cjkRun, run)
			}
		} else {
			other++
		}
		if !isCJK(r) {
			run = 0
		}
		inWord = true
		prev = r
	}
	if inWord && wordHasLetter {
		words++
	}
	return words, cjkRun, letters*5 >= (letters+other)*3 // at least 60% letters
}

func isCodeByte(c byte) bool {
	switch c {
	case '/', '|', '=', '<', '>', '{', '}', '[', ']', '$', '`', '@', '#', '~', '^', '*', '_', '%', '&', '+':
		return true
	}
	return false
}

func isAlnum(r rune) bool {
	return isLetter(r) || '0' <= r && r <= '9' || r >= 0x80 && unicode.IsDigit(r)
}

// stop are English function words, dropped from the words of a text.
var stop = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"on": true, "for": true, "with": true, "by": true, "at": true, "from": true, "as": true, "is": true,
	"are": true, "be": true, "it": true, "its": true, "this": true, "that": true, "these": true,
	"those": true, "me": true, "my": true, "we": true, "our": true, "you": true, "your": true, "i": true,
	"please": true, "can": true, "could": true, "would": true, "should": true, "do": true, "does": true,
	"how": true, "what": true, "where": true, "when": true, "which": true, "into": true, "about": true,
	"up": true, "so": true, "if": true, "then": true, "than": true, "there": true, "has": true,
	"have": true, "had": true, "was": true, "were": true, "will": true, "all": true, "any": true,
	"some": true, "s": true, "t": true,
}

// stem strips a few English suffixes from a lower-case word, so that
// "costs" and "cost", "comparison" and "compare" meet.
func stem(w string) string {
	for _, suf := range [...]string{"ations", "ation", "isons", "ison", "ings", "ing", "ies", "ied", "es", "ed", "s", "e"} {
		if len(w) > len(suf)+2 && w[len(w)-len(suf):] == suf {
			return w[:len(w)-len(suf)]
		}
	}
	return w
}

// words appends to dst the hashes of the content words of s (see the file
// comment), at most maxWords of them, sorted and without duplicates. It
// reads an argument's bytes where they lie, as it reads a task's string.
func words[T ~string | ~[]byte](s T, dst []uint64) []uint64 {
	return cutWords(s, dst, 0)
}

// linkPrefix is how many letters of a word cutWords keeps to link
// rewordings: the inflections and compounds of one word meet ("reembolso"
// and "reembolsos", "Rechnungsadresse" and "Rechnung", "cancel" and
// "cancellation"), and few different words do.
const linkPrefix = 5

// cutWords is words, each word cut to its first cut letters when cut > 0
// (and not stemmed then).
func cutWords[T ~string | ~[]byte](s T, dst []uint64, cut int) []uint64 {
	dst = cutWordsSeq(s, dst, cut)
	slices.Sort(dst)
	return slices.Compact(dst)
}

// cutWordsSeq is cutWords in the text's order, each word as often as it
// is written.
func cutWordsSeq[T ~string | ~[]byte](s T, dst []uint64, cut int) []uint64 {
	dst = dst[:0]
	var buf [64]byte
	w := buf[:0]
	flush := func() {
		if len(w) == 0 {
			return
		}
		t := string(w) // no allocation: only hashed and looked up
		if !stop[t] {
			if cut > 0 {
				n, i := 0, 0
				for i < len(t) && n < cut {
					_, k := utf8.DecodeRuneInString(t[i:])
					i += k
					n++
				}
				dst = append(dst, hashString(t[:i]))
			} else {
				dst = append(dst, hashString(stem(t)))
			}
		}
		w = w[:0]
	}
	var prevCJK rune
	for i := 0; i < len(s); {
		if len(dst) >= maxWords {
			break
		}
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		}
		i += n
		switch {
		case isCJK(r):
			flush()
			if prevCJK != 0 {
				var pair [2 * utf8.UTFMax]byte
				p := utf8.AppendRune(utf8.AppendRune(pair[:0], prevCJK), r)
				dst = append(dst, hashBytes(p))
			}
			prevCJK = r
			continue
		case isAlnum(r):
			if len(w)+utf8.UTFMax <= cap(w) {
				w = utf8.AppendRune(w, unicode.ToLower(r))
			}
		case r == '\'' || r == '’':
			// "yesterday's": the possessive goes, the word stays.
			flush()
		default:
			flush()
		}
		if prevCJK != 0 {
			// A lone CJK character between non-CJK text is a word.
			dst = append(dst, hashString(string(prevCJK)))
			prevCJK = 0
		}
	}
	flush()
	if prevCJK != 0 {
		dst = append(dst, hashString(string(prevCJK)))
	}
	return dst
}

// shared returns how many of two sorted word lists' words they share.
func shared(a, b []uint64) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}

// numbers appends to dst the hashes of the numbers written in s (runs of
// decimal digits, leading zeros ignored), at most 8, sorted and without
// duplicates: "attempt 2" and "attempt 3" name different things, "Q3 ...
// 200 words" and "(<200 words) ... Q3" the same ones.
func numbers(s string, dst []uint64) []uint64 {
	dst = dst[:0]
	var buf [24]byte
	d := buf[:0]
	flush := func() {
		for len(d) > 1 && d[0] == '0' {
			d = d[1:]
		}
		if len(d) > 0 && len(dst) < 8 {
			dst = append(dst, hashBytes(d))
		}
		d = buf[:0]
	}
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			if len(d) < cap(d) {
				d = append(d, byte(r))
			}
		case r >= '０' && r <= '９':
			if len(d) < cap(d) {
				d = append(d, byte('0'+r-'０'))
			}
		default:
			flush()
		}
	}
	flush()
	slices.Sort(dst)
	return slices.Compact(dst)
}

// negations are words that mark a verdict as a refusal or a list of
// defects, in the languages the normalizer reads.
var negations = map[string]bool{
	"not": true, "no": true, "never": true, "nor": true, "fail": true, "fails": true, "failed": true,
	"failing": true, "failure": true, "reject": true, "rejected": true, "rejects": true, "missing": true,
	"lacks": true, "lacking": true, "lack": true, "wrong": true, "incorrect": true, "insufficient": true,
	"cannot": true, "doesn": true, "don": true, "isn": true, "aren": true, "won": true, "denied": true,
	"unresolved": true, "fix": true, "revise": true, "redo": true, "need": true, "needs": true, "requested": true,
	"unacceptable": true, "blocked": true, "blocking": true,
}

// negatedCJK are characters that mark a refusal or a defect in CJK text.
const negatedCJK = "未不没缺驳拒否"

// negative reports whether a verdict reads as a refusal or a list of
// defects: it has a negation word (or character).
func negative(s string) bool {
	var buf [32]byte
	w := buf[:0]
	check := func() bool {
		ok := len(w) > 0 && negations[string(w)]
		w = w[:0]
		return ok
	}
	for _, r := range s {
		switch {
		case isCJK(r):
			if check() {
				return true
			}
			for _, c := range negatedCJK {
				if r == c {
					return true
				}
			}
		case unicode.IsLetter(r):
			if len(w)+utf8.UTFMax <= cap(w) {
				w = utf8.AppendRune(w, unicode.ToLower(r))
			}
		default:
			if check() {
				return true
			}
		}
	}
	return check()
}

// heading returns what comes before the first colon of a verdict, when the
// colon is close to its start ("REJECT: ...", "The draft does not pass:
// ...", "审核未通过：..."), and the rest.
func heading(s string) (head, body string) {
	for i, r := range s {
		if i > 80 {
			break
		}
		if r == ':' || r == '：' {
			return s[:i], s[i+utf8.RuneLen(r):]
		}
	}
	return "", s
}

// rejection reports whether a verdict reads as a rejection: its heading is
// negative ("REJECT:", "Not approved:"), or it lists two points or more and
// says no. A verdict without a heading that lists one point ("no issues
// found", "1 failure") is a report, not a rejection.
func rejection(s string) bool {
	head, _ := heading(s)
	if head != "" {
		return negative(head)
	}
	return items(s) >= 2 && negative(s)
}

// items counts the points a verdict lists: the parts, after its heading,
// separated by semicolons or new lines.
func items(s string) int {
	_, body := heading(s)
	n, cur := 0, false
	for _, r := range body {
		switch r {
		case ';', '；', '\n', '•':
			if cur {
				n++
			}
			cur = false
		default:
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				cur = true
			}
		}
	}
	if cur {
		n++
	}
	return n
}

// workNumbers is numbers of a verdict, the numbers that name its work (a
// commit, a version, a count), without those that measure the run that
// made it: a duration ("took 31 s", "in 2.4s", "3m12s") or a time of day
// ("at 12:03:44"), which are new with each run of the same work. A
// verdict that names only those is not news (delegation.go, rounds.go).
func workNumbers(s string, dst []uint64) []uint64 {
	if !containsDigit(s) {
		return numbers(s, dst)
	}
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] < '0' || b[i] > '9' {
			i++
			continue
		}
		// A number: digits, with '.', ',' or ':' between them.
		j, clock := i, false
		for j < len(b) {
			if b[j] >= '0' && b[j] <= '9' {
				j++
				continue
			}
			if (b[j] == '.' || b[j] == ',' || b[j] == ':') && j+1 < len(b) && b[j+1] >= '0' && b[j+1] <= '9' {
				clock = clock || b[j] == ':'
				j++
				continue
			}
			break
		}
		if clock || runUnit(b[j:]) {
			for k := i; k < j; k++ {
				b[k] = ' '
			}
		}
		i = j
	}
	return numbers(string(b), dst)
}

// runUnit reports whether b starts with a unit of time a run is measured
// in (after one space at most), a word of its own or one a number follows
// ("3m12s"): "ms", "s", "min", "seconds", "h"; not a day or a month,
// which name a period of the work ("the last 30 days").
func runUnit(b []byte) bool {
	if len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	n := 0
	for n < len(b) && (b[n] >= 'a' && b[n] <= 'z' || b[n] >= 'A' && b[n] <= 'Z' || b[n] == 0xC2 || b[n] == 0xB5) {
		n++
	}
	if n == 0 || n < len(b) && b[n] >= 0x80 {
		return false // no word, or one that goes on in other letters
	}
	switch string(bytes.ToLower(b[:n])) {
	case "ns", "us", "µs", "ms":
		return true
	}
	secs, ok := timeUnit(b[:n])
	return ok && secs <= 3600
}

func containsDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}
