package loops

import (
	"bytes"
	"hash/maphash"
	"slices"
	"strconv"
	"time"
)

// This file holds the detectors of loops whose arguments change from call to
// call, so that no two calls are the same: "same_error" (probing with new
// values for the same complaint), "stale_write" (a write retried with a
// precondition already refused) and "rephrase" (reworded questions that
// bring back what the agent already has).

// streakClass reports whether an error type is one whose repetition, with
// whatever arguments, shows that the calls are not getting anywhere: the
// arguments are wrong in the same way, the call is not allowed, or it
// conflicts with the state. not_found is not one: a lookup that fails for
// a new id rules that id out.
func streakClass(errType string) bool {
	switch errType {
	case "invalid_args", "invalid_arguments", "forbidden", "conflict":
		return true
	}
	return false
}

// untypedClass is the class an untyped failure (an upstream MCP tool's
// error result, tool_error, which says nothing of its class) is counted
// under for same_error: invalid_args when its message complains of a
// value's form ("invalid date", "expected YYYY-MM-DD", "must be positive",
// "could not parse"), none otherwise. A message that says something was
// not found is never counted, whatever else it says: a lookup that fails
// for a new id rules that id out.
func untypedClass(errType string, msg []byte) string {
	if errType != "tool_error" && errType != "upstream_error" && errType != "" {
		return ""
	}
	var buf [maxTemplate]byte
	m := buf[:0]
	for _, c := range msg[:min(len(msg), maxTemplate)] {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		m = append(m, c)
	}
	for _, p := range [...]string{"not found", "no such", "does not exist", "doesn't exist", "unknown"} {
		if bytes.Contains(m, []byte(p)) {
			return ""
		}
	}
	// Nor one that says the thing named is in a state that refuses the
	// call ("invalid state: order O-4 has already shipped", "the payment
	// must be settled first"): a batch meets it for one item after
	// another, each a new one, as a lookup meets not found.
	for _, p := range [...]string{"already", "first", "status", "state"} {
		if containsWord(m, p) {
			return ""
		}
	}
	for _, p := range [...]string{"invalid", "malformed", "must be", "expected", "not a valid", "parse", "out of range"} {
		if bytes.Contains(m, []byte(p)) {
			return "invalid_args"
		}
	}
	// Any other complaint counts too, under a class of its own: a tool
	// that fails three times in a row with one template whatever the
	// arguments (a payment declined, a KeyError for one column, however
	// the call is respelled) says the same thing each time, as R3 has it.
	// Its words are compared (but those that hold a digit, and the
	// arguments it echoes), so a probe for a name, a KeyError for each
	// candidate column, is a new complaint each time.
	return untypedStreak
}

// untypedStreak is the class of an untyped failure that says neither what
// was wrong with a value nor that something was not found or is in a
// state that refuses the call.
const untypedStreak = "tool_error"

// containsWord reports whether lower-case text m holds w as a word: not
// inside a longer one ("state", not "statement" or "estate").
func containsWord(m []byte, w string) bool {
	for i := 0; ; {
		j := bytes.Index(m[i:], []byte(w))
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !isWordByte(m[j-1])) && (end == len(m) || !isWordByte(m[end])) {
			return true
		}
		i = j + 1
	}
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c >= 0x80
}

// permanent reports whether an error type says that trying again as is
// cannot help (for a tool declared retryable, every other error counts as
// transient).
func permanent(errType string) bool {
	switch errType {
	case "invalid_args", "invalid_arguments", "not_found", "forbidden", "conflict", "internal":
		return true
	}
	return false
}

const (
	maxTemplate = 1024 // bytes of an error message compared as a template
	maxEcho     = 32   // argument values masked out of an error message
)

// template hashes an error message with the argument values it echoes and
// every word that holds a digit (a number, an id, a version, a request id)
// masked: "date '09-10-2025' is invalid" and
// "date '10/09/2025' is invalid" have one template, and so do "total is
// 564, paid 474" and "total is 564, paid 504".
func (d *Detector) template(msg, args []byte) uint64 {
	if len(msg) > maxTemplate {
		msg = msg[:maxTemplate]
	}
	var echo [maxEcho][]byte
	n := 0
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	for _, l := range as.out {
		// A number written as a string ("4.2", "-1.5") is left to the
		// words with a digit, as the number 4.2 is: echoed as 4.20 or
		// -1.50 it is one value either way (TestEchoedNumberString).
		if l.kind == leafString && len(l.raw) >= 3 && n < len(echo) && !numericText(l.raw) {
			echo[n] = l.raw
			n++
		}
	}
	var h maphash.Hash
	h.SetSeed(seed)
	last := 0
	for i := 0; i < len(msg); {
		matched := 0
		for _, e := range echo[:n] {
			// In any case: a server echoes a value as it keeps it (an
			// e-mail lower-cased), whatever case it was sent in
			// (TestEchoInAnotherCase).
			if len(e) > matched && len(msg)-i >= len(e) && bytes.EqualFold(msg[i:i+len(e)], e) && echoAsWord(msg, i, i+len(e)) {
				matched = len(e)
			}
		}
		if matched == 0 && i > 0 && (msg[i-1] == '\'' || msg[i-1] == '`') {
			// The start of a long value, quoted cut short ("encountered
			// with 'v=DKIM1; k=rsa; p=MIIBIj'"), is that value echoed
			// (TestEchoCutShort).
			matched = cutShortEcho(msg[i:], msg[i-1], echo[:n])
		}
		if matched > 0 {
			if g := generatedSuffix(msg[i+matched:]); g > 0 {
				// A name built on the echoed value for this one attempt
				// (a pod named after its deployment,
				// checkout-api-6c9d8b7f4-x2kqp) names that value, its
				// suffix another each attempt: the value is kept, so
				// that other deployments refused alike stay a batch.
				h.Write(msg[last : i+matched])
				h.WriteString("\x00G")
				i += matched + g
				last = i
				continue
			}
			k := i
			if pathLike(msg[i : i+matched]) {
				// A path echoed is masked with the slashes that join it
				// to what is around it: the address a server builds on
				// it (/v1/ and the path) reads one way however the path
				// was written, with or without its leading slash
				// (TestEchoedPathSlashes).
				for k > last && msg[k-1] == '/' {
					k--
				}
				for i+matched < len(msg) && msg[i+matched] == '/' {
					matched++
				}
			}
			h.Write(msg[last:k])
			// An echoed value is a value, as a word with a digit is
			// when the arguments do not hold it: a charge's id is
			// named in the complaint whether the call gave it or its
			// payment's, and a transition asked by its id ("31") and
			// by its name ("Done") is one complaint.
			h.WriteString("\x00V")
			i += matched
			last = i
			continue
		}
		if isTokenByte(msg[i]) && (i == 0 || !isTokenByte(msg[i-1])) {
			j, digit := i, false
			for j < len(msg) && isTokenByte(msg[j]) {
				digit = digit || isDigit(msg[j])
				j++
			}
			if digit {
				// A word with a digit is a value: an amount, an id, a
				// version, a request id.
				h.Write(msg[last:i])
				h.WriteString("\x00V")
				last = j
			}
			i = j
			continue
		}
		i++
	}
	h.Write(msg[last:])
	return h.Sum64()
}

// minCutEcho is the shortest start of a value quoted cut short that is
// read as the value echoed.
const minCutEcho = 12

// cutShortEcho returns the length of the quoted text at the start of m,
// up to its closing quote q, when it is the start of one of the echoed
// values but not the whole (twelve bytes or more, in any case), or 0.
func cutShortEcho(m []byte, q byte, echo [][]byte) int {
	j := bytes.IndexByte(m, q)
	if j < minCutEcho {
		return 0
	}
	for _, e := range echo {
		if len(e) > j && bytes.EqualFold(m[:j], e[:j]) {
			return j
		}
	}
	return 0
}

// echoAsWord reports whether msg[i:j], an argument's value found in a
// complaint, stands there as the value and not as part of a longer word:
// a value that begins or ends with a letter or a digit must not be
// joined there to another ("pdf" is not echoed by "PDFs", nor "app" by
// "apply"). Found inside a word, it masked a piece of the complaint only
// when the call happened to be spelled that way, and one complaint read as
// another from one spelling to the next (TestEchoOnlyAsWord).
func echoAsWord(msg []byte, i, j int) bool {
	return !(wordJoined(msg[i]) && i > 0 && wordJoined(msg[i-1])) &&
		!(wordJoined(msg[j-1]) && j < len(msg) && wordJoined(msg[j]))
}

// wordJoined reports whether c is a byte that joins a word: a letter, a
// digit, an underscore or a byte of a letter of several.
func wordJoined(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c >= 0x80
}

// errorStreak is what "same_error" remembers about a tool: its last errors
// in a row, of one class and one template, by one agent.
type errorStreak struct {
	count int
	class string
	tmpl  uint64
	agent uint64
	epoch uint64
	reads uint64 // the agent's successful reads at the last error
	last  string // the last message, quoted in a Message
}

func (d *Detector) checkSameError(a *agentState, t *toolState, s *Step) *Verdict {
	c := &d.cfg
	e := &t.errs
	if c.errorStreak == 0 || e.count < c.errorStreak || e.agent != a.id || e.epoch != d.epoch {
		return nil
	}
	if e.class == "conflict" && e.reads != a.reads {
		return nil // a conflict is resolved by reading the new state, which the agent did
	}
	return &Verdict{
		Detector: "same_error",
		Message: s.Tool + " failed " + plural(e.count, "time", "times") + " in a row with the same " + e.class +
			" error, with different arguments each time (last: " + e.last + "); calling it again with " +
			preview(s.Args) + " only tries one more value for the same complaint.",
		Suggestion: "Stop guessing: read what the error asks for and fix exactly that (the format, the amount, " +
			"the permission), check the tool's description, or ask the user for the value; if it cannot be " +
			"done, say so.",
	}
}

// doneSameError records an outcome of t's call s in t's error streak.
//
// A failure read from an HTTP answer (httpFailed) is one complaint only
// about one request: its answer says nothing of the address or the body
// that was sent, so those, its headers left out, are part of it
// (requestKey). One address asked again under respelled headers is one
// complaint; a link checker's or a crawler's other addresses behind one bot
// wall, and an import's other records each answered 409, are not.
//
// So is a failure read from a command's exit status (exitFailed) about the
// things its command names (commandThings): `git push` respelled names
// none, and is one complaint; curl on other addresses, git on other
// commits, a linter in other folders, failing the same way, are each about
// another thing.
func (d *Detector) doneSameError(a *agentState, t *toolState, s *Step, o *Outcome, httpFailed, exitFailed bool) {
	e := &t.errs
	class := o.ErrorType
	thing := uint64(0)
	if o.Error && !streakClass(class) && !Transient(class) {
		class = untypedClass(class, o.Result)
		if class == "" {
			// A complaint the streak does not count (not found, a state
			// that refuses the call, a type it does not know) still counts
			// when it is the same complaint about the same thing word for
			// word, the thing named: a batch or candidates tried one by
			// one name another each time.
			thing = sameThing(o.Result, s.Args)
			if thing != 0 {
				class = o.ErrorType
			}
		}
	}
	if !o.Error || !streakClass(class) && class != untypedStreak && thing == 0 {
		e.count = 0
		return
	}
	var tmpl uint64
	if ids := uint64(0); thing != 0 && class == o.ErrorType && !streakClass(class) {
		ids = d.echoedThings(o.Result, s.Args)
		if ids != 0 {
			// The same complaint about one thing the calls keep naming,
			// whatever other value they try for it (onething.go).
			thing = mix(ids, d.template(o.Result, s.Args))
		}
	}
	if thing != 0 {
		// Word for word, what it echoes of the arguments too: one path
		// asked in other spellings is named one way by the complaint.
		tmpl = mix(hashString(class), thing)
	} else {
		tmpl = mix(hashString(class), d.template(o.Result, s.Args))
		if streakClass(class) {
			// A complaint that names the record each call names by its id
			// (Transition '31' is not valid for issue SHOP-405) is about
			// that record: other records refused alike are a batch.
			tmpl = mix(tmpl, d.echoedIDs(o.Result, s.Args, true))
		}
		if class == "conflict" {
			// What the conflict names of the call (the seats, the
			// slot, the name taken) is what it is about: other ones
			// refused alike are a search for a free one (onething.go).
			tmpl = mix(tmpl, d.takenValues(o.Result, s.Args))
		}
	}
	if httpFailed {
		tmpl = mix(tmpl, requestKey(s.Args))
	}
	if exitFailed {
		if named := namedThings(o.Result); named != 0 {
			tmpl = mix(tmpl, named)
		} else {
			tmpl = mix(tmpl, commandThings(s.Args))
		}
	}
	if e.count > 0 && e.class == class && e.tmpl == tmpl && e.agent == a.id && e.epoch == s.epoch &&
		e.epoch == d.epoch && (e.class != "conflict" || e.reads == a.reads) {
		e.count++
	} else {
		*e = errorStreak{count: 1, class: class, tmpl: tmpl, agent: a.id, epoch: d.epoch, reads: a.reads}
	}
	e.last = preview(o.Result)
}

// sameThing hashes an error message word for word when it names a thing
// (a path, a value in single quotes, an id: a word of letters and digits,
// or of four digits or more), or returns 0: the same message about one
// thing, whatever the arguments that asked for it (one file's path
// respelled, one payment refunded with another amount), is one complaint.
// A status code (404), a line number, "HTTP/1.1" and an apostrophe
// (doesn't) name nothing. A request's own id in it (request id:
// req_8f2c...) is left out: each request has another. An e-mail or IPv4
// address names a thing only when the call's arguments args hold it too
// (address.go): the client's own address is no thing asked about.
func sameThing(msg, args []byte) uint64 {
	if len(msg) > maxTemplate {
		msg = msg[:maxTemplate]
	}
	var h maphash.Hash
	h.SetSeed(seed)
	named := false
	var vals argValues
	for i := 0; i < len(msg); {
		c := msg[i]
		if (c == '\'' || c == '/') && (i == 0 || opensValue(msg[i-1])) {
			named = true // a quoted value, a path or an address ('/srv/a', /srv/a, https://)
		}
		if c == '\\' && i+1 < len(msg) && (msg[i+1] == 'n' || msg[i+1] == 't' || msg[i+1] == 'r') {
			// A line break as JSON writes it (\n): the next word starts
			// a line.
			h.Write(msg[i : i+2])
			i += 2
			if i < len(msg) && isTokenByte(msg[i]) {
				if n := max(dateTimeLen(msg[i:]), clockLen(msg[i:])); n > 0 {
					h.WriteString("\x00C")
					i += n
				}
			}
			continue
		}
		if !isTokenByte(c) || i > 0 && isTokenByte(msg[i-1]) {
			h.WriteByte(c)
			i++
			continue
		}
		if n := max(dateTimeLen(msg[i:]), clockLen(msg[i:])); n > 0 {
			// When a line was logged (09:21:04, 2026-12-06T06:20:14Z)
			// is each attempt's own, not the thing complained of.
			h.WriteString("\x00C")
			i += n
			continue
		}
		j, digits, letters := i, 0, false
		for j < len(msg) && isTokenByte(msg[j]) {
			if isDigit(msg[j]) {
				digits++
			} else if msg[j] != '-' && msg[j] != '_' {
				letters = true
			}
			j++
		}
		if digits > 0 && requestIDBefore(msg[:i]) {
			h.WriteString("\x00R")
		} else if ownValue(msg[:i], msg[i:j], args) {
			// What the attempt made of its own (its attempt's, its
			// submission's, its job's id, one the call did not name) or
			// measured of itself (took_ms, wall_time_s): each attempt's
			// own, as a request's id is (attempt.go).
			h.WriteString("\x00O")
		} else if memoryAddress(msg[i:j]) {
			// Where a process put an object (an encoder's context,
			// [aost#0:1 @ 0x5598f4c2a1c0]) is that run's, placed anew
			// each time the command runs: no thing asked about.
			h.WriteString("\x00A")
		} else if j-i > 10 && holdsDate(msg[i:j]) {
			// A name stamped with when it was made (a run's log,
			// 2026-12-06T09_20_11Z.log) is the attempt's own; a date
			// alone (no slot on 2026-12-08) stays.
			h.WriteString("\x00C")
		} else if n := builtOnArg(msg[i:j], args, &vals); n > 0 {
			// A name the system built on a value of the call for this
			// attempt (deployment checkout-api-7d9f4a1, its pod
			// checkout-api-7d9f4a1-x0q) names that value: each attempt
			// builds another suffix.
			named = true
			h.Write(msg[i : i+n])
			h.WriteString("\x00G")
		} else {
			named = named || digits > 0 && letters || digits >= 4
			h.Write(msg[i:j])
		}
		i = j
	}
	if !named && !namesAskedAddress(msg, args) {
		return 0
	}
	return h.Sum64() | 1
}

// generatedSuffix returns the length of a generated suffix at the start
// of b, right after a value: a hyphen and the rest of the word, holding a
// digit (-6c9d8b7f4-x2kqp, -7d9f4a1), or 0. A suffix of letters alone
// (-worker) names another thing.
func generatedSuffix(b []byte) int {
	if len(b) < 2 || b[0] != '-' || !isTokenByte(b[1]) {
		return 0
	}
	k, digit := 1, false
	for k < len(b) && isTokenByte(b[k]) {
		digit = digit || isDigit(b[k])
		k++
	}
	if !digit {
		return 0
	}
	return k
}

// argValues holds a call's string argument values of three bytes or more,
// scanned once when first needed.
type argValues struct {
	done bool
	n    int
	v    [maxEcho][]byte
}

// builtOnArg returns the length of the value of args that word w is built
// on, followed by a generated suffix (generatedSuffix) to its end, or 0.
func builtOnArg(w, args []byte, vals *argValues) int {
	if bytes.IndexByte(w, '-') < 0 {
		return 0
	}
	if !vals.done {
		vals.done = true
		var buf [maxEcho]leaf
		for _, l := range scanLeaves(args, buf[:0], len(buf), false).out {
			if l.kind == leafString && len(l.raw) >= 3 && vals.n < len(vals.v) {
				vals.v[vals.n] = l.raw
				vals.n++
			}
		}
	}
	best := 0
	for _, v := range vals.v[:vals.n] {
		if len(v) > best && len(v) < len(w) && bytes.HasPrefix(w, v) && generatedSuffix(w[len(v):]) == len(w)-len(v) {
			best = len(v)
		}
	}
	return best
}

// opensValue reports whether a quote or a slash after byte c opens a
// value: after a space, a quote, a bracket, a colon or an equals sign, not
// after a letter (doesn't, HTTP/1.1).
func opensValue(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\'', '"', '(', '[', ':', '=', '/':
		return true
	}
	return false
}

// requestIDBefore reports whether text b ends by naming a request's id
// ("request id: ", "request_id=", "RequestId ").
func requestIDBefore(b []byte) bool {
	b = b[max(0, len(b)-16):]
	var buf [16]byte
	m := buf[:0]
	for _, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			m = append(m, c+'a'-'A')
		case 'a' <= c && c <= 'z':
			m = append(m, c)
		}
	}
	return bytes.HasSuffix(m, []byte("requestid"))
}

// versionKey reports whether an argument's key names a version
// precondition: expected_version, base_revision, resourceVersion, if_match,
// etag, sha, if_seq_no.
func versionKey(k []byte) bool {
	var w keyWords
	w.split(k)
	for i := range w.n {
		switch string(w.word(i)) {
		case "version", "revision", "rev", "etag", "generation", "sha", "ifmatch", "vsn":
			return true
		case "match", "seq": // if_match, if_seq_no; not match_id
			if i > 0 && string(w.word(i-1)) == "if" {
				return true
			}
		}
	}
	return false
}

const maxConflicts = 16 // write preconditions remembered for "stale_write"

// conflict is what "stale_write" remembers about one write precondition: a
// tool, the entity it writes (its key values) and the version it expects.
type conflict struct {
	key     uint64   // tool, entity and version together
	ents    []uint64 // hashes of the entity's key values (none: the tool's only entity)
	count   int      // conflicts in a row with this precondition
	epoch   uint64   // write epoch of the last conflict
	agent   uint64   // the agent that made the last conflicting write
	version string   // the version, quoted in a Message
	last    string   // the last conflict's message
}

// precondition returns the identity of write s's precondition, and its
// entity's key values (hashes, into ents), or 0 when s has no argument that
// names a version.
func (d *Detector) precondition(s *Step, ents []uint64) (key uint64, version string, out []uint64) {
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	var ver *leaf
	for i := range as.out {
		l := &as.out[i]
		if ver == nil && (l.kind == leafString || l.kind == leafNumber) && versionKey(l.key) {
			ver = l
		}
	}
	if ver == nil {
		return 0, "", ents
	}
	key = mix(hashString(s.Tool), mix(ver.val, 0x766572))
	for i := range as.out {
		l := &as.out[i]
		if l == ver || l.kind == leafLiteral || len(ents) == cap(ents) {
			continue
		}
		named := false
		if len(s.Key) > 0 {
			for _, k := range s.Key {
				named = named || string(l.key) == k
			}
		} else {
			named = identKey(l.key) && !proseArg(l.key, l.raw)
		}
		if named {
			ents = append(ents, l.val)
			key = mix(key, l.val)
		}
	}
	return key, string(ver.raw), ents
}

func (d *Detector) findConflict(key uint64) *conflict {
	for i := range d.conflicts {
		if d.conflicts[i].key == key {
			return &d.conflicts[i]
		}
	}
	return nil
}

func (d *Detector) checkStaleWrite(s *Step) *Verdict {
	c := &d.cfg
	if c.staleWriteMax == 0 || !isWrite(s.Access) || len(d.conflicts) == 0 {
		return nil
	}
	var buf [4]uint64
	key, version, _ := d.precondition(s, buf[:0])
	if key == 0 {
		return nil
	}
	cf := d.findConflict(key)
	if cf == nil || cf.count < c.staleWriteMax || cf.epoch != d.epoch || cf.agent != d.agent(s.Agent).id {
		return nil
	}
	return &Verdict{
		Detector: "stale_write",
		Message: s.Tool + " was refused " + plural(cf.count, "time", "times") + " with a conflict (" + cf.last +
			") while expecting version " + version + ", and nothing was read since; writing again with the same version " +
			preview(s.Args) + " will conflict again, whatever else changed.",
		Suggestion: "Read the current version of what you are changing first, apply your change to it, and write " +
			"with the new version; if it keeps changing under you, tell the user.",
	}
}

// doneStaleWrite records the outcome of write s.
func (d *Detector) doneStaleWrite(s *Step, o *Outcome) {
	if d.cfg.staleWriteMax == 0 {
		return
	}
	conflicted := o.Error && o.ErrorType == "conflict"
	if !conflicted && len(d.conflicts) == 0 {
		return
	}
	var buf [4]uint64
	key, version, ents := d.precondition(s, buf[:0])
	if key == 0 {
		return
	}
	cf := d.findConflict(key)
	if !conflicted {
		if cf != nil && !o.Error {
			cf.count = 0 // the precondition held after all
		}
		return
	}
	if cf == nil {
		if len(d.conflicts) == maxConflicts {
			copy(d.conflicts, d.conflicts[1:])
			d.conflicts = d.conflicts[:maxConflicts-1]
		}
		d.conflicts = append(d.conflicts, conflict{key: key, ents: append([]uint64(nil), ents...), version: version})
		cf = &d.conflicts[len(d.conflicts)-1]
	}
	a := d.agent(s.Agent).id
	if cf.epoch != d.epoch || cf.agent != a {
		cf.count = 0
	}
	cf.count++
	cf.epoch, cf.agent = d.epoch, a
	cf.last = preview(o.Result)
}

// readSeen tells "stale_write" that a read of s succeeded: a conflict on an
// entity whose key values the read names (or on any entity, when its write
// names none) may have been resolved.
func (d *Detector) readSeen(s *Step) {
	if len(d.conflicts) == 0 {
		return
	}
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	for i := range d.conflicts {
		cf := &d.conflicts[i]
		all := true
		for _, e := range cf.ents {
			found := false
			for _, l := range as.out {
				found = found || l.val == e
			}
			all = all && found
		}
		if all {
			cf.count = 0
		}
	}
}

// question returns the identity of the question that read call s asks:
// its arguments with their free text left out (so that rewordings of it
// are one question, whatever the tool), and every other value respelled
// one way (so that "AB-1200 " and "ab-1200", "02" and 2, are one
// question). Without free text it is a question of that tool alone (the
// same arguments to another tool ask another). 0 for a write, or
// arguments too long to read. It sets s.asking, s.prose and s.search too.
// All four depend on the tool and the arguments alone (and on s being a
// read): checkTool keeps them with the call (callState.keepQuestion) and
// does not ask again when the call is made again.
func (d *Detector) question(s *Step) uint64 {
	if isWrite(s.Access) {
		return 0
	}
	if !mayHoldProse(s.Args) {
		q, b := foldArgsBound(s.Tool, s.Args)
		s.asking = b
		return q
	}
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0
	}
	// The first value that is free text, if any: arguments without free
	// text are folded once, by foldArgsBound, and not respelled here
	// first for a sum that would be thrown away; the values before it are
	// known not to be free text and not looked at twice.
	first := -1
	for i := range as.out {
		if l := &as.out[i]; l.kind == leafString && proseArg(l.key, l.raw) {
			first = i
			break
		}
	}
	if first < 0 {
		q, b := foldArgsBound(s.Tool, s.Args)
		s.asking = b
		return q
	}
	// The question is the multiset of the other values, each respelled as
	// foldArgs respells it, whatever keys they are under: the same free
	// text asked again with its filter renamed ({"status":"open"}, then
	// {"state":"OPEN"}) or a day given as its midnight is the question
	// asked again. The asking binds each value to its path.
	q := uint64(0x717565)
	var sum uint64
	var f folder
	for i := range as.out {
		l := &as.out[i]
		v := l.val
		if l.kind == leafString && a2aMessageID(l.key, s.Args) {
			continue // an A2A message's own id, new with each send (a2a.go)
		}
		switch {
		case l.kind == leafString && (i == first || i > first && proseArg(l.key, l.raw)):
			v = 0x70726f7365
			s.search = s.search || keyKind(l.key) == queryKey
			sum += mix(v, 0x76616c)
			q = mix(q, mix(l.path, v))
			continue
		case l.kind == leafString:
			f.str(l.raw)
			sum += mix(f.sum(), 0x76616c)
			v = respelled(l.raw, v)
		case l.kind == leafNumber:
			f.num(l.raw)
			sum += mix(f.sum(), 0x76616c)
			v = respelled(l.raw, v)
		default:
			sum += mix(v, 0x76616c)
		}
		q = mix(q, mix(l.path, v))
	}
	s.prose, s.asking = true, q // its values under their keys already
	return mix(0x717565, sum)
}

// askedWords fills s.asked with the content words of the free text of read
// call s, cut to linkPrefix letters, and s.script with its scripts, the
// first time they are needed: only a question whose answers went stale
// compares them, so most calls never read them.
func (d *Detector) askedWords(s *Step) {
	if !s.prose || s.nasked > 0 || s.script != 0 {
		return
	}
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	ws := d.words[:0]
	for i := range as.out {
		if l := &as.out[i]; l.kind == leafString && proseArg(l.key, l.raw) {
			d.wordsOf = cutWords(l.raw, d.wordsOf[:0], linkPrefix)
			ws = append(ws, d.wordsOf...)
			s.script |= scriptOf(l.raw)
		}
	}
	slices.Sort(ws)
	ws = slices.Compact(ws)
	s.nasked = uint8(copy(s.asked[:], ws))
	d.words = ws[:0]
}

const maxAsked = 16 // content words of a question's free text kept to link its rewordings

// rewords reports whether the free text of asking s rewords the question
// of a streak, whose askings' words are streak and whose answer's are
// found (each word cut to linkPrefix letters). A rewording keeps some of
// the question's words (its subject, a name, a product: "reset Okta MFA"
// and "Okta MFA zurücksetzen"), or meets the words of the documents its
// question found; a longer text (eight words or more, in a script written
// with spaces) must share two. A different text given to the same tool
// that answers alike (a review to a classifier, a ticket to a router,
// another question to a knowledge base that has nothing) shares none, or a
// word in passing. A question without free text, or before a streak, has
// nothing to compare: it is one question.
//
// Words are only compared within a script: a question asked in Chinese and
// then in English ("修改发票地址", "modify the payment address") shares no
// word and may be the same; it is left to its answer, as before.
func rewords(s *Step, streak, found []uint64, script uint8) bool {
	a := s.asked[:s.nasked]
	if len(a) == 0 || len(streak) == 0 || s.script&script == 0 {
		return true
	}
	need := 1
	if len(a) >= 8 && s.script == spaced {
		need = 2 // not for CJK, whose overlapping pairs are many for few words
	}
	return max(shared(a, streak), shared(a, found)) >= need
}

const (
	spaced   = 1 << iota // a script written with spaces (Latin, Cyrillic, ...)
	unspaced             // a script written without (Chinese, Japanese, Korean)
)

// scriptOf returns the scripts text b is written in, from its bytes: the
// lead bytes of UTF-8 from U+3000 to U+DFFF (CJK, kana, Hangul) are
// unspaced; an ASCII letter, or the lead byte of a letter of two bytes
// (Latin with accents, Greek, Cyrillic), spaced. Punctuation, full-width
// forms and the rest say nothing.
func scriptOf(b []byte) uint8 {
	var m uint8
	for _, c := range b {
		switch {
		case c >= 0xE3 && c <= 0xED:
			m |= unspaced
		case c >= 0xC3 && c <= 0xD5 || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			m |= spaced
		}
	}
	return m
}

// respelled hashes a scalar argument value as one spelling of it: a number
// (or a string that is one) in its shortest form, a string without the
// white space around it and in lower case. Longer values keep hash h.
func respelled(raw []byte, h uint64) uint64 {
	var buf [48]byte
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > len(buf) {
		return h
	}
	if numeric(raw) {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return hashBytes(strconv.AppendFloat(buf[:0], f, 'g', -1, 64))
		}
	}
	for i, c := range raw {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return hashBytes(buf[:len(raw)])
}

// mayHoldProse is a quick look: free text has a space, or is written in a
// script without spaces (bytes above ASCII).
func mayHoldProse(args []byte) bool {
	for _, c := range args {
		if c == ' ' || c >= 0x80 {
			return true
		}
	}
	return false
}

// foldArgs hashes a tool's canonical arguments that hold no free text with
// every value respelled as respelled does, in one pass over the bytes: the
// question of that tool they ask. It is the multiset of the values, each
// respelled, whatever keys they are under and in whatever order: the same
// values under other names ({"where": ...} asked again as {"filter": ...},
// spreadsheet_id as spreadsheetId) or a list in another order ask the
// same question. A date-time with a zone is its instant in UTC, a span of
// time (45m, PT45M, 0.75h, 45 minutes) its seconds, a path without "./"
// at its start or a slash at its end. Each value's respelled bytes go
// through a buffer on the stack, hashed when full and at its end.
func foldArgs(tool string, args []byte) uint64 {
	q, _ := foldArgsBound(tool, args)
	return q
}

// foldArgsBound returns foldArgs's question, and the asking: the same
// values each bound to the key it is under. Values bound otherwise under
// one set of keys (row 1 seat 3, then row 3 seat 1; Lyon to Turin, then
// Turin to Lyon) are one question but another asking, new to the agent.
func foldArgsBound(tool string, args []byte) (question, asking uint64) {
	return foldArgsInto(tool, args, nil, nil)
}

// boundValues appends to out the values of arguments args as the asking
// sums them, each respelled and bound to its key, and returns the sum of
// their keys too.
func boundValues(args []byte, out []uint64) ([]uint64, uint64) {
	var keys uint64
	foldArgsInto("", args, &out, &keys)
	return out, keys
}

// foldArgsInto is foldArgsBound, appending each bound value to vals and
// adding its key to keys when they are not nil.
func foldArgsInto(tool string, args []byte, vals *[]uint64, keys *uint64) (question, asking uint64) {
	var f folder
	var sum, bound, key uint64
	glob := false // the key names a pattern (patternKey)
	value := func() {
		v := f.sum()
		sum += mix(v, 0x76616c)
		bound += mix(v, key)
		if vals != nil {
			*vals = append(*vals, mix(v, key))
			*keys += mix(key, 0x6b6579)
		}
	}
	for i := 0; i < len(args); {
		switch c := args[i]; {
		case c == '"':
			j := i + 1
			for j < len(args) && args[j] != '"' {
				if args[j] == '\\' {
					j++
				}
				j++
			}
			if j+1 < len(args) && args[j+1] == ':' {
				// A key: what a value is called is not what is asked.
				key = hashBytes(args[i+1 : j])
				glob = patternKey(args[i+1 : j])
				i = j + 2
				continue
			}
			if v := args[i+1 : min(j, len(args))]; glob && globWord(v) {
				f.glob(v)
			} else {
				f.str(v)
			}
			value()
			i = j + 1
		case c == '-' || isDigit(c):
			j := i + 1
			for j < len(args) && (isDigit(args[j]) || args[j] == '.' || args[j] == '-' || args[j] == '+' || args[j] == 'e' || args[j] == 'E') {
				j++
			}
			f.num(args[i:j])
			value()
			i = j
		case 'a' <= c && c <= 'z': // true, false, null
			j := i + 1
			for j < len(args) && 'a' <= args[j] && args[j] <= 'z' {
				j++
			}
			f.q, f.n = 0x6c6974, 0
			f.write(args[i:j])
			value()
			i = j
		default:
			i++ // the punctuation of objects and lists
		}
	}
	t := hashString(tool)
	return mix(t, sum), mix(t, bound)
}

// str starts a value over with string v (its JSON escapes as written)
// respelled: a span or an instant one way, code of several words as the
// multiset of its words, a number as a number, a path without "./" at its
// start or a slash at its end, the rest in lower case.
func (f *folder) str(v []byte) {
	v = bytes.TrimSpace(v)
	f.q, f.n = 0x737472, 0
	if n := kindBeforeID(v); n > 0 {
		v = v[n:] // sensor 131075, PA-131075: the id the word classes
	}
	switch {
	case f.span(v) || f.instant(v):
	case codeOfWords(v):
		// Code of several words (a query, a command, a condition
		// or a range written without spaces, day='2026-12-01',
		// 'Q4'!A1:D20): the same words in another order, spaced
		// or quoted otherwise, ask the same question.
		f.byte('"')
		f.word(wordsFold(v))
	case pattern(v):
		// A glob or a regular expression: the same words matched in
		// another way (*.pem, **/*.pem, *.PEM, *pem; func\\s+Name and
		// func\\W+Name) ask for the same files. One with a space is code
		// of words, above.
		f.byte('*')
		f.word(patternFold(v))
	case !f.number(v):
		f.byte('"')
		v = unquoteName(webAddress(v))
		if f.notation(v) {
			break // one name in other punctuation (notation.go)
		}
		if len(v) > 2 && bytes.IndexByte(v, '/') > 0 {
			v = bytes.TrimSuffix(bytes.TrimPrefix(v, []byte("./")), []byte("/"))
		}
		for _, c := range v {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			f.byte(c)
		}
	}
}

// unquoteName is v without the quotes around a name quoted as SQL quotes
// an identifier ("orders", `orders`, its JSON escapes as written): the
// quoted name names what the bare one names. ('orders' is a string.)
func unquoteName(v []byte) []byte {
	var q []byte
	switch {
	case len(v) > 4 && v[0] == '\\' && v[1] == '"':
		q = v[:2]
	case len(v) > 2 && v[0] == '`':
		q = v[:1]
	default:
		return v
	}
	in := v[len(q) : len(v)-len(q)]
	if !bytes.HasSuffix(v, q) || len(in) == 0 || bytes.IndexAny(in, "\"'`\\ ") >= 0 {
		return v
	}
	return in
}

// pattern reports whether string v (its JSON escapes as written) is a
// glob or a regular expression: it holds a star, or a backslash of its
// own (a backslash escaped in JSON, two bytes).
func pattern(v []byte) bool {
	return len(v) > 1 && (bytes.IndexByte(v, '*') >= 0 || bytes.Contains(v, []byte(`\\`)))
}

// patternFold hashes glob or regular expression v (its JSON escapes as
// written) as the multiset of its words, lower-cased: runs of letters,
// digits and underscores (and bytes beyond ASCII), a regular expression's
// escape (\\s, \\b, \\() and every other character between them.
func patternFold(v []byte) uint64 { return patternFoldInto(v, nil) }

// patternFoldInto is patternFold, appending each word's hash to dst when
// it is not nil (alike.go).
func patternFoldInto(v []byte, dst *[]uint64) uint64 {
	const offset, prime = 0xcbf29ce484222325, 0x100000001b3
	var sum uint64
	h, n := uint64(offset), 0
	flush := func() {
		if n > 0 {
			sum += mix(h, uint64(n))
			if dst != nil {
				*dst = append(*dst, mix(h, uint64(n)))
			}
			h, n = offset, 0
		}
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			flush()
			i++ // the JSON escape's character
			if i < len(v) && v[i] == '\\' {
				i++ // a backslash of the expression: its escape's character
			}
		case 'A' <= c && c <= 'Z':
			h, n = (h^uint64(c+'a'-'A'))*prime, n+1
		case 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c >= 0x80:
			h, n = (h^uint64(c))*prime, n+1
		default:
			flush()
		}
	}
	flush()
	return sum
}

// webAddress returns web address v without what does not name another
// page: its scheme (http or https), a "www." before its host and a
// fragment (#abstract, which the browser never sends). A fragment that
// routes a single-page application ("#/orders/12", "#!/inbox") names
// one, and stays. Other values are returned as they are.
func webAddress(v []byte) []byte {
	switch {
	case len(v) > 8 && bytes.EqualFold(v[:8], []byte("https://")):
		v = v[8:]
	case len(v) > 7 && bytes.EqualFold(v[:7], []byte("http://")):
		v = v[7:]
	default:
		return v
	}
	if len(v) > 4 && bytes.EqualFold(v[:4], []byte("www.")) {
		v = v[4:]
	}
	if i := bytes.IndexByte(v, '#'); i >= 0 && !(i+1 < len(v) && (v[i+1] == '/' || v[i+1] == '!')) {
		v = v[:i]
	}
	return v
}

// num starts a value over with the number written v.
func (f *folder) num(v []byte) {
	f.q, f.n = 0x737472, 0
	if !f.number(v) {
		f.write(v)
	}
}

// codeOfWords reports whether string value v holds a space or one of
// =<>!'| (code of several words, foldArgsBound; a filter's alternatives
// written without spaces, today|overdue, as today | overdue): one pass,
// where bytes.ContainsAny builds its set of bytes anew at each call.
func codeOfWords(v []byte) bool {
	for _, c := range v {
		switch c {
		case ' ', '=', '<', '>', '!', '\'', '|':
			return true
		}
	}
	return false
}

// instant writes v, when it is a date-time with a zone, as its instant in
// UTC: 2026-12-09T13:00:00+01:00 and 2026-12-09T12:00:00Z are one time.
// A day's midnight, in UTC or without a zone, is that day as a date is
// written: 2026-12-18, 2026-12-18T00:00 and 2026-12-18T00:00:00Z ask for
// one day (a check-in, a calendar's day), and a tool that took the date
// takes its midnight alike.
func (f *folder) instant(v []byte) bool {
	n := dateTimeLen(v)
	if n != len(v) || n < 16 {
		return false
	}
	if midnight(v) {
		f.byte('"')
		f.write(v[:10])
		return true
	}
	if n < 20 {
		return false
	}
	num := func(b []byte) int {
		x := 0
		for _, c := range b {
			x = x*10 + int(c-'0')
		}
		return x
	}
	i, sec, nsec := 16, 0, 0
	if v[i] == ':' {
		sec, i = num(v[17:19]), 19
		if i < n && (v[i] == '.' || v[i] == ',') {
			k := i + 1
			for i = k; i < n && isDigit(v[i]); i++ {
			}
			frac := v[k:i]
			if len(frac) > 9 {
				frac = frac[:9]
			}
			nsec = num(frac)
			for range 9 - len(frac) {
				nsec *= 10
			}
		}
	}
	var off time.Duration
	switch {
	case i < n && v[i] == 'Z':
	case i+2 < n && (v[i] == '+' || v[i] == '-'):
		z := v[i+1:]
		h, m := num(z[:2]), 0
		if len(z) >= 5 && z[2] == ':' {
			m = num(z[3:5])
		} else if len(z) >= 4 {
			m = num(z[2:4])
		}
		off = time.Duration(h)*time.Hour + time.Duration(m)*time.Minute
		if v[i] == '-' {
			off = -off
		}
	default:
		return false // no zone: a wall time, kept as written
	}
	t := time.Date(num(v[:4]), time.Month(num(v[5:7])), num(v[8:10]), num(v[11:13]), num(v[14:16]), sec, nsec, time.UTC).Add(-off)
	var buf [40]byte
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		f.byte('"')
		f.write(t.AppendFormat(buf[:0], time.DateOnly))
		return true
	}
	f.byte('@')
	f.write(t.AppendFormat(buf[:0], time.RFC3339Nano))
	return true
}

// midnight reports whether the date-time v (dateTimeLen long) is the
// start of its day written without a zone or in UTC: its time all zeros
// (00:00, 00:00:00, 00:00:00.000), then nothing, Z, +00:00 or +0000.
func midnight(v []byte) bool {
	i := 11
	for i < len(v) && (v[i] == '0' || v[i] == ':' || v[i] == '.' || v[i] == ',') {
		i++
	}
	z := v[i:]
	return i >= 16 && (len(z) == 0 || string(z) == "Z" || string(z) == "+00:00" || string(z) == "+0000" || string(z) == "+00")
}

// span writes v, when it is a span of time, as its seconds: 45m, 2700s,
// 0.75h, PT45M (ISO 8601) and "45 minutes" are one span; a bare number is
// not one.
func (f *folder) span(v []byte) bool {
	if len(v) < 2 || len(v) > 24 || !isDigit(v[len(v)-1]) && !isLetter(rune(v[len(v)-1])) {
		return false
	}
	var low [24]byte
	for i, c := range v {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	w := low[:len(v)]
	if len(w) > 2 && w[0] == 'p' && w[1] == 't' {
		w = w[2:]
	}
	secs, any := 0.0, false
	for len(w) > 0 {
		d := 0
		for d < len(w) && (isDigit(w[d]) || w[d] == '.') {
			d++
		}
		if d == 0 {
			return false
		}
		digits := w[:d]
		w = w[d:]
		if len(w) > 0 && w[0] == ' ' {
			w = w[1:]
		}
		u := 0
		for u < len(w) && 'a' <= w[u] && w[u] <= 'z' {
			u++
		}
		// The unit first: most values are not spans (an id of digits),
		// and their number need not be parsed to say so.
		var per float64
		switch string(w[:u]) {
		case "ms":
			per = 0.001
		case "s", "sec", "secs", "second", "seconds":
			per = 1
		case "m", "min", "mins", "minute", "minutes":
			per = 60
		case "h", "hr", "hrs", "hour", "hours":
			per = 3600
		case "d", "day", "days":
			per = 86400
		default:
			return false
		}
		x, err := strconv.ParseFloat(string(digits), 64)
		if err != nil {
			return false
		}
		secs, any, w = secs+x*per, true, w[u:]
	}
	if !any {
		return false
	}
	var buf [32]byte
	f.byte('~')
	f.write(strconv.AppendFloat(buf[:0], secs, 'g', -1, 64))
	return true
}

// folder is foldArgs's buffer and running hash.
type folder struct {
	q   uint64
	n   int
	buf [256]byte
}

func (f *folder) byte(c byte) {
	if f.n >= len(f.buf) {
		f.flush()
	}
	f.buf[f.n] = c
	f.n++
}

func (f *folder) flush() { f.q, f.n = mix(f.q, hashBytes(f.buf[:f.n])), 0 }

func (f *folder) write(b []byte) {
	for _, c := range b {
		f.byte(c)
	}
}

func (f *folder) sum() uint64 { return mix(f.q, hashBytes(f.buf[:f.n])) }

func (f *folder) word(h uint64) {
	for i := 0; i < 64; i += 8 {
		f.byte(byte(h >> i))
	}
}

// wordsFold hashes a string of code in JSON (its escapes as written) as the
// multiset of its words, lower-cased: runs between white space, quotes,
// brackets, commas and semicolons, with a comparison (=, <, >, !) a word of
// its own. A query or a command whose columns, conditions or flags come in
// another order, or are written with other spacing, quoting or parentheses,
// is one question ("status = 'late' AND region = 'EU'", "(region='EU') and
// (status='late')"); a path or a dotted name stays one word ("a/b.txt" is
// not "b/a.txt"), without a slash at its end or "./" at its start ("src/"
// and "./src" are "src"). Escapes separate words, and options are left out.
func wordsFold(v []byte) uint64 { return wordsFoldInto(v, nil) }

// wordsFoldInto is wordsFold, appending each word's hash to dst when it is
// not nil (alike.go).
func wordsFoldInto(v []byte, dst *[]uint64) uint64 {
	// Each word is hashed as it is read (FNV-1a, then mixed so that the
	// sum of words does not cancel), without a buffer or a call per word.
	const offset, prime = 0xcbf29ce484222325, 0x100000001b3
	var sum uint64
	h, n := uint64(offset), 0
	named := false // the word holds a letter or a digit, or is a comparison: dst's
	flush := func() {
		if n > 0 {
			sum += mix(h, uint64(n))
			if dst != nil && named {
				*dst = append(*dst, mix(h, uint64(n)))
			}
			h, n, named = offset, 0, false
		}
	}
	// A query's table aliases are left out (FROM orders o, o.region is
	// FROM orders, region): the same query with an alias asks the same.
	var abuf [maxAliases]sqlAlias
	aliases := sqlAliases(v, abuf[:0])
	for i := 0; i < len(v); i++ {
		c := v[i]
		if n == 0 && len(aliases) > 0 && !wordEnd(c) && c != '=' && c != '<' && c != '>' && c != '!' {
			if skip := aliasAt(v, i, aliases); skip > 0 {
				i += skip - 1
				continue
			}
		}
		if n == 0 && (c == '2' || c == '|' || c == '/' || i == 0) {
			// A command's plumbing says how its output is shown, not
			// what it asks: an environment setting before it
			// (PAGER=cat), its errors joined to its output (2>&1), a
			// last stage that pages or cuts it (| cat, | less, | head
			// -n 50).
			if skip := plumbing(v, i); skip > 0 {
				i += skip - 1
				continue
			}
		}
		switch {
		case c == '\\':
			flush()
			i++ // the escaped character
		case wordEnd(c):
			flush()
		case c == '=' || c == '<' || c == '>' || c == '!':
			flush()
			h, n, named = (h^uint64(c))*prime, 1, true
			flush()
		case c == '|' && n > 0:
			// A pipe or an alternative joined to the word before it
			// (today|overdue) is the word of its own it is when
			// spaced (today | overdue).
			flush()
			h, n = (h^uint64(c))*prime, 1
			flush()
		default:
			if n == 0 && c == '-' && option(v[i+1:]) {
				// An option (-v, --no-cache, -count=1) says how, not
				// what: a command retried with other options asks the
				// same question. The words after it stay (-run TestX),
				// and so does a value joined to it that names something
				// (--repo=acme/api, --namespace=prod, -run=TestX, as
				// after a space); a count or a switch (-count=1,
				// -parallel=4, -refresh=true, as -v is) is a
				// setting, left out with its option, unless the option
				// names an identifier (--id=1234, --job-id=55120: the
				// number names the thing asked about).
				name := i
				for i+1 < len(v) && !wordEnd(v[i+1]) && v[i+1] != '=' {
					i++
				}
				if i+1 < len(v) && v[i+1] == '=' {
					j := i + 2
					for j < len(v) && !wordEnd(v[j]) {
						j++
					}
					if !setting(v[i+2:j]) || identKey(bytes.TrimLeft(v[name:i+1], "-")) {
						i++ // the value is read as the next word
						continue
					}
					i = j - 1
				}
				continue
			}
			if c == '/' && n > 0 && (i+1 == len(v) || wordEnd(v[i+1])) {
				continue // a directory named with its slash (src/) is src
			}
			if c == '.' && n == 0 && i+2 < len(v) && v[i+1] == '/' && !wordEnd(v[i+2]) {
				i++ // nor is ./src another path than src
				continue
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			named = named || c >= 0x80 || isDigit(c) || 'a' <= c && c <= 'z'
			h = (h ^ uint64(c)) * prime
			n++
		}
	}
	flush()
	return sum
}

// plumbing returns how many bytes of v at i, where a word starts, say only
// how a command's output is shown: an environment setting that starts the
// text (PAGER=cat, before a command), 2>&1 or 2>/dev/null, a pipe into a
// pager or a cut that ends the command (| cat, | less -R, | head -n 50,
// | tail -50); 0 when none.
func plumbing(v []byte, i int) int {
	_, e := codeWord(v, i)
	w := v[i:e]
	switch {
	case v[i] == '2' && i+1 < len(v) && v[i+1] == '>':
		j := i + 2
		for j < len(v) && !wordEnd(v[j]) {
			j++
		}
		if rest := v[i+2 : j]; string(rest) == "&1" || string(rest) == "/dev/null" {
			return j - i
		}
	case string(w) == "|" && e < len(v):
		a, b := codeWord(v, e)
		switch string(v[a:b]) {
		case "cat", "less", "more", "head", "tail":
		default:
			return 0
		}
		j := b
		for j < len(v) && v[j] != '|' && v[j] != ';' && v[j] != '&' && v[j] != '>' {
			j++
		}
		if j < len(v) {
			return 0 // a stage in the middle feeds the next one
		}
		return j - i
	case i == 0 && e < len(v) && v[e] == '=' && envName(w):
		j := e + 1
		for j < len(v) && v[j] != ' ' && v[j] != '\'' && v[j] != '"' {
			j++
		}
		if j > e+1 && j < len(v) && v[j] == ' ' {
			return j - i
		}
	}
	return 0
}

// envName reports whether w names an environment variable: upper-case
// letters, digits and _, starting with a letter, three or more.
func envName(w []byte) bool {
	if len(w) < 3 || w[0] < 'A' || w[0] > 'Z' {
		return false
	}
	for _, c := range w {
		if !('A' <= c && c <= 'Z' || isDigit(c) || c == '_') {
			return false
		}
	}
	return true
}

// maxAliases bounds the table aliases of a query left out of its words.
const maxAliases = 4

// sqlAlias is a table alias a query defines: its name, and where the
// words that define it start (the alias, and an AS before it).
type sqlAlias struct {
	name     []byte
	at, asAt int // asAt is -1 without AS
}

// codeWord returns the word of v that starts at or after i (its escapes
// and the separators of wordsFold between words), as start and end; start
// is len(v) when there is none.
func codeWord(v []byte, i int) (int, int) {
	for i < len(v) {
		c := v[i]
		switch {
		case c == '\\':
			i += 2
			continue
		case wordEnd(c) || c == '=' || c == '<' || c == '>' || c == '!':
			i++
			continue
		}
		break
	}
	j := i
	for j < len(v) && !wordEnd(v[j]) && v[j] != '=' && v[j] != '<' && v[j] != '>' && v[j] != '!' {
		j++
	}
	return min(i, len(v)), j
}

// sqlAliases appends to out the table aliases that query v defines after
// a FROM or a JOIN (FROM orders o, JOIN customers AS c), once it has
// said SELECT: a command or a text that says "from" defines none.
func sqlAliases(v []byte, out []sqlAlias) []sqlAlias {
	if !bytes.Contains(v, []byte("from")) && !bytes.Contains(v, []byte("FROM")) && !bytes.Contains(v, []byte("From")) {
		return out
	}
	sel := false
	for i := 0; i < len(v) && len(out) < cap(out); {
		a, b := codeWord(v, i)
		if a >= len(v) {
			break
		}
		i = b
		w := v[a:b]
		switch {
		case bytes.EqualFold(w, []byte("select")):
			sel = true
			continue
		case !sel || !bytes.EqualFold(w, []byte("from")) && !bytes.EqualFold(w, []byte("join")):
			continue
		}
		ta, tb := codeWord(v, i)
		if ta >= len(v) || !sqlName(v[ta:tb], true) {
			continue
		}
		xa, xb := codeWord(v, tb)
		al := sqlAlias{at: xa, asAt: -1}
		if xa < len(v) && bytes.EqualFold(v[xa:xb], []byte("as")) {
			al.asAt = xa
			xa, xb = codeWord(v, xb)
			al.at = xa
		}
		if xa >= len(v) || !sqlName(v[xa:xb], false) || sqlKeyword(v[xa:xb]) {
			continue
		}
		al.name = v[xa:xb]
		out = append(out, al)
		i = xb
	}
	return out
}

// sqlName reports whether w is a table's name (letters, digits and _,
// dots between a schema and a table when dotted) or an alias's.
func sqlName(w []byte, dotted bool) bool {
	if len(w) == 0 || len(w) > 64 || isDigit(w[0]) {
		return false
	}
	for _, c := range w {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c == '_' || dotted && c == '.') {
			return false
		}
	}
	return true
}

// sqlKeyword reports whether a word after a table's name is a keyword
// that goes on with the query, not an alias of the table.
func sqlKeyword(w []byte) bool {
	if len(w) > 11 {
		return false
	}
	var low [11]byte
	for i, c := range w {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	switch string(low[:len(w)]) {
	case "where", "join", "left", "right", "inner", "outer", "full", "cross", "natural", "lateral", "on", "using",
		"group", "order", "limit", "offset", "fetch", "union", "except", "intersect", "having", "window", "for",
		"as", "select", "from", "and", "or", "not", "values", "set", "returning", "tablesample", "qualify", "final", "sample":
		return true
	}
	return false
}

// aliasAt returns how many bytes of v at i, where a word starts, belong to
// a table alias: the alias or its AS where the query defines it, or an
// alias and its dot before a column (o.region); 0 when none do.
func aliasAt(v []byte, i int, aliases []sqlAlias) int {
	for _, a := range aliases {
		if i == a.at || i == a.asAt {
			_, j := codeWord(v, i)
			return j - i
		}
		if n := len(a.name); i+n < len(v) && v[i+n] == '.' && bytes.EqualFold(v[i:i+n], a.name) {
			return n + 1
		}
	}
	return 0
}

// option reports whether the rest of a word after a '-' makes it a
// command's option: a letter, or a second '-' and a letter ("-5" and
// "-0.5" are numbers, "--" alone is not an option).
func option(rest []byte) bool {
	if len(rest) > 0 && rest[0] == '-' {
		rest = rest[1:]
	}
	return len(rest) > 0 && ('a' <= rest[0] && rest[0] <= 'z' || 'A' <= rest[0] && rest[0] <= 'Z')
}

// setting reports whether an option's joined value says how rather than
// what: a count, or a switch turned on or off.
func setting(b []byte) bool {
	return digits(b) || bytes.EqualFold(b, []byte("true")) || bytes.EqualFold(b, []byte("false"))
}

// digits reports whether b is a count: digits only.
func digits(b []byte) bool {
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return len(b) > 0
}

// wordEnd reports whether c ends a word of code for wordsFold.
func wordEnd(c byte) bool {
	switch c {
	case '\\', ' ', '\t', '\'', '"', '`', '(', ')', '[', ']', '{', '}', ',', ';':
		return true
	}
	return false
}

// number writes b in one spelling of its value, when b is a number: an
// integer without its leading zeros (a JSON integer keeps its digits as
// written, however long), another number as strconv writes its float64.
func (f *folder) number(b []byte) bool {
	if !numeric(b) {
		return false
	}
	d := b
	if d[0] == '-' {
		d = d[1:]
	}
	integer := len(d) > 0
	for _, c := range d {
		integer = integer && isDigit(c)
	}
	if integer {
		f.byte('#')
		if len(d) < len(b) {
			f.byte('-')
		}
		if d = bytes.TrimLeft(d, "0"); len(d) == 0 {
			d = b[len(b)-1:] // all zeros: "0"
		}
		f.write(d)
		return true
	}
	var buf [32]byte
	if len(b) > len(buf) {
		return false
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return false
	}
	f.byte('#')
	f.write(strconv.AppendFloat(buf[:0], v, 'g', -1, 64))
	return true
}

// kindBeforeID returns the length of a word of letters (two to twelve)
// and one separator (a space, ':', '-', '_' or '#') before an id of four
// digits or more and nothing else at the start of v, or 0: "sensor
// 131075", "PA-131075" and "purpleair:131075" name what "131075" names,
// the word saying only what kind of thing it is or whose.
func kindBeforeID(v []byte) int {
	i := 0
	for i < len(v) && i < 13 && ('a' <= v[i] && v[i] <= 'z' || 'A' <= v[i] && v[i] <= 'Z') {
		i++
	}
	if i < 2 || i > 12 || i+5 > len(v) {
		return 0
	}
	switch v[i] {
	case ' ', ':', '-', '_', '#':
	default:
		return 0
	}
	for _, c := range v[i+1:] {
		if !isDigit(c) {
			return 0
		}
	}
	return i + 1
}

// numeric is a quick look before strconv.ParseFloat, whose error allocates:
// digits, with at most the signs, point and exponent of a number.
func numeric(b []byte) bool {
	digit := false
	for _, c := range b {
		switch {
		case isDigit(c):
			digit = true
		case c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E':
		default:
			return false
		}
	}
	return digit
}

// questionState is what "rephrase" remembers about one agent's question:
// its rewordings in a row that brought nothing new, each the same answer.
type questionState struct {
	stale   int
	epoch   uint64
	answer  uint64    // the last answer's pieces
	args    uint64    // hash of the last asking's arguments as written
	asked   [3][]byte // the last rewordings (tool and arguments), oldest first; the buffers are reused
	n       int
	words   [maxStreakWords]uint64 // words of the streak's free text, sorted (rewords)
	found   [maxStreakWords]uint64 // words of its answer, sorted
	nwords  int
	nfound  int
	script  uint8 // the scripts of the streak's free text
	fscript uint8 // and of its answer's
	// verdict: the streak's answer is one text (a label, a routing, "no
	// issues found"), not a set of documents.
	verdict bool
	// records: the streak's answer, each time the same, lists records
	// (found); then askings that share no word are rewordings too.
	records bool
	// common: the words every asking of the streak used (templated).
	common  [maxAsked]uint64
	ncommon int
}

// Other items of one template. A prompt that carries its item beside a
// fixed instruction ("Classify the sentiment of this customer review as
// positive, neutral or negative: <review>") shares the instruction's words
// with every asking before it, and an answer alike ("positive") is the
// same verdict on another item, not the same question reworded. A
// rewording keeps a word or two of its subject and changes the rest; the
// next item keeps the whole instruction and adds words no asking said.

const (
	templateWords = 4 // words every asking used, at least, for a template
	templateItem  = 4 // words no asking said and the answer does not name, at least, for an item
)

// templated reports whether asking s is another item of the streak's
// template: it holds every word the streak's askings all used, those are
// templateWords or more, and it adds templateItem words or more that no
// asking said and the answer does not name.
func (qs *questionState) templated(s *Step) bool {
	a, c := s.asked[:s.nasked], qs.common[:qs.ncommon]
	if len(c) < templateWords || shared(a, c) < len(c) {
		return false
	}
	w, f := qs.words[:qs.nwords], qs.found[:qs.nfound]
	item := 0
	for _, x := range a {
		if !has(w, x) && !has(f, x) {
			item++
		}
	}
	return item >= templateItem
}

// listsRecords reports whether an answer lists three records or more of two
// text fields or more (a search's documents with their titles and links),
// or one record of four text fields or more with an identifier among them
// (a contact), its echoes of the asking left out: found by a question, the
// same records each time are the same finding whatever words asked for
// them. A verdict on a text, one field or one report of several lines
// under one key, is none.
func listsRecords(ans []leaf, ec *echoes) bool {
	var paths [8]uint64
	var counts [8]int
	n := 0
	for i := range ans {
		l := &ans[i]
		if l.kind != leafString || ec.isText(l.val) {
			continue
		}
		j := 0
		for j < n && paths[j] != l.path {
			j++
		}
		if j == n {
			if n == len(paths) {
				continue
			}
			paths[n], n = l.path, n+1
		}
		counts[j]++
	}
	many, fields := 0, 0
	for _, c := range counts[:n] {
		if c >= 3 {
			many++
		}
		fields++
	}
	if many >= 2 {
		return true
	}
	// One record named by its identifier, of four text fields or more (a
	// contact found by a fuzzy search): the same one each time is the same
	// finding too.
	if fields < 4 {
		return false
	}
	for i := range ans {
		if l := &ans[i]; l.kind == leafString && identKey(l.key) && !ec.isText(l.val) {
			return true
		}
	}
	return false
}

const maxStreakWords = 32

// about reports whether the streak's answer is about its question, as a
// search's documents are about what was searched for: it shares a word
// with one of its askings, or with s. A verdict on a text (a label, a
// team, "no issues found") says nothing of the text's words, and texts
// given to one tool that answers alike may well share a name ("Acme
// router ..." tickets all routed to one team) without rewording each
// other. A question without free text is answered by its arguments.
//
// Nor may the askings be tied by their label alone: tickets that each
// say "billing", routed to billing, or reviews that each ask for a
// refund, classified as refund, share that one word with each other and
// with the answer, and with nothing else. An answer about the question
// names two of its words ("Reset Okta MFA"), or the askings share a word
// that the answer does not hold (the address of "change the billing
// address" and "where to edit the invoice address", found as "Billing
// settings").
func (qs *questionState) about(s *Step) bool {
	if s.nasked == 0 || qs.nwords == 0 || s.script&qs.script == 0 || (qs.script|s.script)&qs.fscript == 0 {
		// Nothing to compare; an asking in another script than the
		// streak's (an English rewording among Chinese ones, judged by its
		// answer alone, as rewords does); or words of other scripts (an
		// English title for a Chinese query).
		return true
	}
	f, w, a := qs.found[:qs.nfound], qs.words[:qs.nwords], s.asked[:s.nasked]
	named := 0 // words of the answer that the askings name
	for _, x := range f {
		if has(w, x) || has(a, x) {
			named++
		}
	}
	if named >= 2 {
		return true
	}
	if named == 0 {
		return false
	}
	for _, x := range a {
		if has(w, x) && !has(f, x) {
			return true
		}
	}
	return false
}

// aboutCarried reports whether the streak's answer is about a text the
// question carries, the same in each asking (a document handed over to be
// summarised under reworded instructions): it names two words or more of
// a string argument of eight words or more that is not free text, so not
// part of what is reworded but of the question itself. The instructions
// reworded ("Summarise in three bullets", "Give me a 3-bullet summary")
// need not appear in an answer about the document they apply to. Another
// document is another question: its askings are another streak.
func (d *Detector) aboutCarried(s *Step, qs *questionState) bool {
	if qs.nfound < 2 {
		return false
	}
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	f := qs.found[:qs.nfound]
	for i := range as.out {
		l := &as.out[i]
		if l.kind != leafString || keyKind(l.key) == codeKey || proseArg(l.key, l.raw) || bytes.Count(l.raw, []byte(" ")) < 7 {
			continue
		}
		d.wordsOf = cutWords(l.raw, d.wordsOf[:0], linkPrefix)
		named := 0
		for _, x := range d.wordsOf {
			if has(f, x) {
				named++
			}
		}
		if named >= 2 {
			return true
		}
	}
	return false
}

// sameText reports whether the free text of asking s is the streak's
// again, word for word (its content words those of every asking so far):
// not another text that an answer alike could tie to it by mistake (a
// classifier's next review), but the question asked again with its other
// arguments respelled or renamed, whatever its answer says of it.
func (qs *questionState) sameText(s *Step) bool {
	return s.nasked > 0 && slices.Equal(s.asked[:s.nasked], qs.words[:qs.nwords])
}

// has reports whether sorted words ws hold w.
func has(ws []uint64, w uint64) bool {
	_, ok := slices.BinarySearch(ws, w)
	return ok
}

// join adds the words of asking s to the streak's, and those of its answer
// (the strings of ans but those that echo the asking's own text: a router
// that hands each ticket back with its team says nothing of it) when the
// streak begins.
func (qs *questionState) join(s *Step, ans []leaf, ec *echoes) {
	if qs.nwords == 0 {
		qs.ncommon = copy(qs.common[:], s.asked[:s.nasked])
	} else {
		n := 0
		for _, x := range qs.common[:qs.ncommon] {
			if has(s.asked[:s.nasked], x) {
				qs.common[n] = x
				n++
			}
		}
		qs.ncommon = n
	}
	var buf [maxStreakWords + maxAsked]uint64
	ws := append(append(buf[:0], qs.words[:qs.nwords]...), s.asked[:s.nasked]...)
	slices.Sort(ws)
	qs.nwords = copy(qs.words[:], slices.Compact(ws))
	if qs.nfound == 0 && s.nasked > 0 {
		var buf [maxStreakWords + maxWords]uint64
		ws := buf[:0]
		texts := 0
		for i := range ans {
			if n := len(ws); ans[i].kind == leafString && n <= maxStreakWords && !ec.isText(ans[i].val) {
				ws = append(ws, cutWords(ans[i].raw, ws[n:n], linkPrefix)...)
				qs.fscript |= scriptOf(ans[i].raw)
				texts++
			}
		}
		qs.verdict = texts == 1
		slices.Sort(ws)
		qs.nfound = copy(qs.found[:], slices.Compact(ws))
	}
	qs.script |= s.script
}

func (d *Detector) checkRephrase(a *agentState, s *Step) *Verdict {
	c := &d.cfg
	if c.rephraseMax == 0 || s.question == 0 {
		return nil
	}
	qs, ok := d.questions.get(mix(a.id, s.question))
	if !ok || qs.stale < c.rephraseMax || qs.epoch != d.epoch || qs.args == hashBytes(s.Args) {
		return nil // the last asking again, word for word, is repeat's to judge
	}
	d.askedWords(s)
	if qs.templated(s) {
		return nil // another item under the same instruction
	}
	if !(qs.records && s.search) && !qs.sameText(s) && (!rewords(s, qs.words[:qs.nwords], qs.found[:qs.nfound], qs.script) || qs.answer != toldAnswer && !qs.about(s) && !d.aboutCarried(s, qs)) {
		return nil // another question with the same arguments, or an answer that says nothing of it
	}
	brought := ") brought nothing that " + a.who() + " had not seen already"
	if qs.answer == toldAnswer {
		brought = ") were each answered that the answer had been given already"
	}
	return &Verdict{
		Detector: "rephrase",
		Message: "the last " + plural(qs.stale, "rewording", "rewordings") + " of the same question (" + qs.list() +
			brought + ", and nothing was written since; " +
			s.Tool + " " + preview(s.Args) + " asks it once more in other words.",
		Suggestion: "Rewording the query does not find anything new: work with the documents you already have, " +
			"open one of them, search for something else, or tell the user what you found and what is missing.",
	}
}

// doneRephrase records whether the answer to question s brought the agent
// anything new (fresh pieces), or nothing (stale), or cannot tell. Stale
// answers count in a row only while each is the answer before it again
// (the same documents, in any order): answers that are different parts of
// what the agent knows (a code search for one term, then another) are
// not a rewording going round.
//
// It returns whether s, a stale answer's asking, asked another question
// than the streak's with the same arguments (a free text that does not
// reword theirs, or one given to a tool whose answer is not about it).
//
// small says that the answer is too small to judge (an empty list, one
// count) but holds nothing new, to a question without free text: it is
// judged too, from the question's second asking answered alike, so that a
// question asked once keeps a word of state (smallOnce), not a streak's:
// answers like these are common, and a streak's state for each question
// they answered held 13 MB more under 128 sessions.
func (d *Detector) doneRephrase(a *agentState, s *Step, fresh, judged, small bool, answer uint64, ans []leaf, ec *echoes, told bool) (other bool) {
	if d.cfg.rephraseMax == 0 || s.question == 0 {
		return false
	}
	k := mix(a.id, s.question)
	qs, ok := d.questions.get(k)
	first := false // the streak begins at its second asking: count the first
	if !ok {
		if fresh || !judged && !small {
			// Nothing to count yet: the first stale answer counts one
			// whatever came before it, so a question needs no state
			// until then (most never get one).
			return false
		}
		if !judged {
			if was, seen := d.smallOnce.get(k); !seen || was != answer {
				d.smallOnce.put(k, answer)
				return false
			}
			// A search in words counts from its second asking: the
			// first, kept as one word, holds none of its words. An
			// answer that says it was given before counts the asking
			// before it.
			first = !s.prose || told
		}
		qs = &questionState{}
		d.questions.put(k, qs)
	}
	judged = judged || small
	defer func() {
		if first && qs.stale > 0 {
			qs.stale++
		}
	}()
	if qs.epoch != d.epoch {
		qs.stale, qs.n, qs.nwords, qs.nfound, qs.script, qs.fscript, qs.verdict, qs.epoch = 0, 0, 0, 0, 0, 0, false, d.epoch
	}
	switch {
	case fresh:
		qs.stale, qs.n, qs.nwords, qs.nfound, qs.script, qs.fscript, qs.verdict = 0, 0, 0, 0, 0, 0, false
	case judged:
		d.askedWords(s)
		// A text that rewords none of the streak's is another question, and
		// so is one whose answer, a verdict, is not about it (a verdict on
		// another text that shares a word with the last): the streak starts
		// over from it, so that a word in passing with one of many texts
		// classified alike ties it to none of them. Documents that do not
		// name this asking's words (a help centre's titles for a reworded
		// question) keep the streak: only the refusal needs them about it.
		// The same records again (documents found) tie askings that share
		// no word: synonyms only ("terminate membership", "end automatic
		// renewal") that find what the last asking found.
		// A text handed over to be judged (a ticket to a tool that
		// suggests replies, a review to a tagger) finds nothing: texts
		// that share no word and get the same suggestions are other texts.
		same := s.search && qs.stale > 0 && answer == qs.answer && listsRecords(ans, ec)
		reworded := qs.stale == 0 || same || rewords(s, qs.words[:qs.nwords], qs.found[:qs.nfound], qs.script)
		notAbout := qs.stale > 0 && !same && !told && !qs.sameText(s) && !qs.about(s)
		// Another item under the streak's instruction is another
		// question; the streak keeps its template (templated).
		other = !reworded || notAbout || qs.stale > 0 && !told && qs.templated(s)
		if answer != qs.answer || !reworded || notAbout && qs.verdict {
			qs.stale, qs.n, qs.nwords, qs.nfound, qs.script, qs.fscript, qs.verdict = 0, 0, 0, 0, 0, 0, false
		}
		qs.stale++
		qs.join(s, ans, ec)
		if qs.n > 0 && qs.args == hashBytes(s.Args) {
			break // the last asking again: listed once
		}
		if qs.n == len(qs.asked) {
			oldest := qs.asked[0]
			copy(qs.asked[:], qs.asked[1:])
			qs.n--
			qs.asked[qs.n] = oldest
		}
		b := append(append(qs.asked[qs.n][:0], s.Tool...), ' ')
		qs.asked[qs.n] = appendPreview(b, s.Args)
		qs.n++
	}
	if judged {
		qs.answer, qs.args = answer, hashBytes(s.Args)
		qs.records = s.search && !fresh && listsRecords(ans, ec)
	}
	return other
}

func (qs *questionState) list() string {
	var b []byte
	for i, q := range qs.asked[:qs.n] {
		if i > 0 {
			b = append(b, "; "...)
		}
		b = append(b, q...)
	}
	return string(b)
}

// numericText reports whether b is a decimal number and nothing else (a
// sign, digits, one point).
func numericText(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	digits, point := 0, false
	for _, c := range b {
		switch {
		case isDigit(c):
			digits++
		case c == '.' && !point:
			point = true
		default:
			return false
		}
	}
	return digits > 0
}

// memoryAddress reports whether w is a memory address: 0x and eight to
// sixteen hex digits, a machine word. A longer one (an Ethereum account's
// 40 digits, a transaction's 64) is an id and names its thing
// (TestReview27ChainAddressesAreThings).
func memoryAddress(w []byte) bool {
	if len(w) < 10 || len(w) > 18 || w[0] != '0' || w[1] != 'x' && w[1] != 'X' {
		return false
	}
	for _, c := range w[2:] {
		if !isDigit(c) && !('a' <= c && c <= 'f') && !('A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// pathLike reports whether v, an argument's value, is a path: it holds a
// slash between two other bytes, and no white space.
func pathLike(v []byte) bool {
	t := bytes.Trim(v, "/")
	return bytes.IndexByte(t, '/') > 0 && !bytes.ContainsAny(v, " \t\n")
}
