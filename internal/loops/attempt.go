package loops

import "bytes"

// A failure's message names the attempt as well as the thing it failed
// on: a payment's attempt id, a declaration's submission reference, the
// job a solve started and lost (job 4411 not created), how long it ran.
// Each attempt has its own, so the same complaint about one thing reads
// otherwise each time it is made, word for word; the thing it names
// (the payment's hash, the node of the singular matrix, the code of the
// missing field) stays. These are left out of what "same_error" compares
// of a complaint it counts only word for word (sameThing), as a request's
// own id already was: a fresh id under a key that names an attempt's, a
// submission's or a job's, or after such a word in a line of text, when
// the call's arguments do not hold it (a job asked for by its id is the
// thing), and the value of a key that names fetch metadata (volatileKey:
// a trace's id, a latency, a measured wall time).

// ownWords are the words that name what an attempt makes of its own:
// before an id (attempt_id, submissionRef, job_id, operationId) or alone
// (job, deployment): a long-running operation, a deployment or an
// execution started for the call and named in its failure
// (TestOwnOperationIDs).
var ownWords = map[string]bool{
	"attempt": true, "submission": true, "job": true,
	"operation": true, "deployment": true, "execution": true,
}

// ownIDWords are the last words of a key that name an id.
var ownIDWords = map[string]bool{
	"id": true, "ref": true, "reference": true, "number": true, "no": true, "uuid": true,
}

// ownValue reports whether the word w of an error message, after text
// before it, is the attempt's own: the value of a metadata key, or a fresh
// id (a word with a digit that the call's arguments args do not hold)
// under a key or after a word of ownWords.
func ownValue(before, w, args []byte) bool {
	key, text := keyBefore(before)
	if key == nil {
		return false
	}
	if !text && volatileKey(key) {
		return true
	}
	digit := false
	for _, c := range w {
		if isDigit(c) {
			digit = true
			break
		}
	}
	if !digit || bytes.Contains(args, w) {
		return false
	}
	var kw keyWords
	if !kw.split(key) || kw.n == 0 || kw.n > 3 {
		return false
	}
	last := string(kw.word(kw.n - 1))
	if kw.n == 1 {
		return ownWords[last]
	}
	if !ownIDWords[last] {
		return false
	}
	for i := range kw.n - 1 {
		if ownWords[string(kw.word(i))] {
			return true
		}
	}
	return false
}

// keyBefore returns the key a value starting right after b is under, in
// an error message that is a JSON document written in a JSON string
// (\"attempt_id\":7710, \"submission_ref\":\"2e6a...), or in one that is
// not escaped; or else, with text true, the word of letters right before
// it in a line of text (job 4411); or nil.
func keyBefore(b []byte) (key []byte, text bool) {
	i := len(b)
	trim := func() {
		for i > 0 && b[i-1] == ' ' {
			i--
		}
	}
	quote := func() bool {
		switch {
		case i >= 2 && b[i-1] == '"' && b[i-2] == '\\':
			i -= 2
			return true
		case i >= 1 && b[i-1] == '"':
			i--
			return true
		}
		return false
	}
	quoted := quote() // a string value's opening quote
	at := i
	trim()
	if i > 0 && b[i-1] == ':' {
		i--
		trim()
		if !quote() {
			return nil, false
		}
		end := i
		for i > 0 && b[i-1] != '"' && end-i < 64 {
			i--
		}
		if i == 0 || i == end {
			return nil, false
		}
		if k := b[i:end]; k[len(k)-1] != '\\' {
			return bytes.TrimSuffix(k, []byte{'\\'}), false
		}
		return nil, false
	}
	if i = at; quoted || i == 0 || b[i-1] != ' ' {
		return nil, false
	}
	end := i - 1
	i = end
	for i > 0 && isLetter(rune(b[i-1])) && end-i < 32 {
		i--
	}
	if i == end || i > 0 && isTokenByte(b[i-1]) {
		return nil, false
	}
	return b[i:end], true
}
