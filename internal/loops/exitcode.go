package loops

import (
	"bytes"
	"encoding/json"
)

// exitFailedAnswer reports whether b, a successful answer, is a command
// that failed, handed back as its output: a shell or process tool's
// object with the command's output (stdout, stderr or output) and its
// exit status (exit_code, exitCode, returncode, return_code, exit_status,
// exitStatus, rc) not zero. The tool ran; the command did not: `git push`
// rejected, a test run that fails, a script that raises print what went
// wrong and exit 1, as an error result would have said. A command that
// exits non-zero saying nothing of an error (grep finding nothing, diff
// finding a difference) did what it was asked: its stderr is empty and
// its output names no error or failure. Only small answers that hold both
// words are read whole.
func exitFailedAnswer(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) < 16 || len(b) > maxExceptionBytes || b[0] != '{' ||
		!bytes.Contains(b, []byte("out")) && !bytes.Contains(b, []byte("err")) {
		return false
	}
	// A cheap look before the parse: one of the keys with a number not
	// zero after it.
	nonzero := false
	for _, k := range [...]string{`"exit_code"`, `"exitCode"`, `"returncode"`, `"return_code"`, `"exit_status"`, `"exitStatus"`, `"rc"`} {
		if c := valueAfterKey(b, k); c >= '1' && c <= '9' || c == '-' {
			nonzero = true
			break
		}
	}
	if !nonzero {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	output, failed := false, false
	for k, v := range top {
		switch f := foldKey(k); f {
		case "stdout", "stderr", "output":
			var text string
			if json.Unmarshal(v, &text) != nil {
				continue
			}
			output = output || f == "stderr" && len(bytes.TrimSpace([]byte(text))) > 0 || saysFailure(text)
		case "exitcode", "returncode", "exitstatus", "rc":
			var n json.Number
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			if d.Decode(&n) != nil {
				return false
			}
			i, err := n.Int64()
			if err != nil {
				return false
			}
			failed = i != 0
		}
	}
	return output && failed
}

// foldKey is k lower-cased without its separators: exit_code, exitCode and
// Exit-Code are exitcode.
func foldKey(k string) string {
	var buf [24]byte
	m := buf[:0]
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'A' <= c && c <= 'Z':
			m = append(m, c+'a'-'A')
		case c == '_' || c == '-':
		default:
			m = append(m, c)
		}
	}
	return string(m)
}

// saysFailure reports whether a command's output names an error or a
// failure (error, Error:, FAILED, fatal).
func saysFailure(text string) bool {
	var buf [maxExceptionBytes]byte
	m := buf[:0]
	for i := 0; i < len(text) && len(m) < cap(m); i++ {
		c := text[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		m = append(m, c)
	}
	for _, w := range [...]string{"error", "fail", "fatal"} {
		if bytes.Contains(m, []byte(w)) {
			return true
		}
	}
	return false
}

// valueAfterKey returns the first byte of the value after the first
// occurrence of key (quoted, as in JSON) in b, or 0.
func valueAfterKey(b []byte, key string) byte {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0
	}
	rest := b[i+len(key):]
	j := 0
	for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t' || rest[j] == '\n' || rest[j] == '\r') {
		j++
	}
	if j == len(rest) || rest[j] != ':' {
		return 0
	}
	for j++; j < len(rest) && (rest[j] == ' ' || rest[j] == '\t' || rest[j] == '\n' || rest[j] == '\r'); j++ {
	}
	if j == len(rest) {
		return 0
	}
	return rest[j]
}

// commandThings hashes, in any order, the words of a command tool's
// string arguments that name a thing: a path or an address (a word with
// a slash), a file or a host (a dot between letters or digits), a commit
// or any other word with a digit. A command respelled with its flags
// reordered or its defaults said out loud (git push, git push origin main,
// git push -u origin main) names the same things, none here; curl on
// another address, git on another commit, a linter in another folder name
// another.
func commandThings(args []byte) uint64 {
	var buf [16]leaf
	sc := scanLeaves(args, buf[:0], len(buf), false)
	sum := uint64(0)
	for i := range sc.out {
		l := &sc.out[i]
		if l.kind != leafString {
			continue
		}
		var sys unitWords
		for j := 0; j < len(l.raw); {
			if isSpace(l.raw[j]) {
				j++
				continue
			}
			k := j
			for k < len(l.raw) && !isSpace(l.raw[k]) {
				k++
			}
			if sys.unit(l.raw[j:k]) {
				// A unit systemctl is asked about, by its bare name or
				// not: each its own thing (unitname.go).
				sum += hashBytes(unitStem(l.raw[j:k])) | 1
			} else if w := commandPath(unitStem(l.raw[j:k])); namesCommandThing(w) {
				sum += hashBytes(w) | 1
			}
			j = k
		}
	}
	return sum
}

// commandPath is a command's word as the thing it names: an option's
// value (--file=backup.tar.gz names the archive, as the word alone does),
// a path without its leading ./ or its trailing slashes (restore/,
// ./restore and restore are one folder). A folder of one word is then no
// thing, as restore written bare is not.
func commandPath(w []byte) []byte {
	if len(w) > 2 && w[0] == '-' {
		if i := bytes.IndexByte(w, '='); i > 0 && i+1 < len(w) {
			w = w[i+1:]
		}
	}
	for len(w) > 2 && w[0] == '.' && w[1] == '/' {
		w = w[2:]
	}
	for len(w) > 1 && w[len(w)-1] == '/' {
		w = w[:len(w)-1]
	}
	return w
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// namesCommandThing reports whether a word of a command names a thing: it
// holds a slash or a digit, or a dot between two other bytes, and is not
// an option (-count=1, --output=json) or an amount (30, 600s, 512MB: an
// option's value, a timeout widened).
func namesCommandThing(w []byte) bool {
	if len(w) == 0 || w[0] == '-' {
		return false
	}
	d := 0
	for d < len(w) && isDigit(w[d]) {
		d++
	}
	if d > 0 && len(w)-d <= 2 {
		unit := true
		for _, c := range w[d:] {
			unit = unit && asciiLetter(c)
		}
		if unit {
			return false
		}
	}
	for i, c := range w {
		if c == '/' || isDigit(c) || c == '.' && i > 0 && i < len(w)-1 {
			return true
		}
	}
	return false
}

// namedThings hashes, in any order, the things a command's output names
// in itself: a path or an address (a word with a slash between letters),
// an id (a word of six bytes or more with letters and digits, not a date
// nor an amount such as 600ms). A complaint that names them is about
// them, whatever else its command is respelled to name: the same state
// lock by its id under `-chdir=infra/prod`, the same unmerged file after
// `git -c core.editor=true rebase --continue`. A complaint that names
// none (a dependency failed, permission denied) says nothing of what it
// is about, and its command's things tell a batch apart (commandThings).
// 0 for none.
func namedThings(msg []byte) uint64 {
	if len(msg) > maxTemplate {
		msg = msg[:maxTemplate]
	}
	sum := uint64(0)
	for i := 0; i < len(msg); {
		if !isPathByte(msg[i]) {
			i++
			continue
		}
		j, slash := i, false
		for j < len(msg) && isPathByte(msg[j]) {
			slash = slash || msg[j] == '/'
			j++
		}
		w := bytes.Trim(msg[i:j], "./")
		if holdsDate(w) || bytes.HasSuffix(w, []byte(".log")) {
			// A file named by when it was made (a run's log,
			// _logs/2026-12-05T21_31_07_120Z-debug-0.log) is this run's,
			// another each run; a log is where the output went (see
			// /var/log/build.log), not what failed.
			i = j
			continue
		}
		if slash && bytes.IndexByte(w, '/') > 0 && bytes.ContainsFunc(w, func(r rune) bool { return r < 128 && asciiLetter(byte(r)) }) {
			sum += hashBytes(w) | 1
		} else {
			for k := 0; k < len(w); {
				if !isTokenByte(w[k]) {
					k++
					continue
				}
				e := k
				for e < len(w) && isTokenByte(w[e]) {
					e++
				}
				if idWord(w[k:e]) && !memoryAddress(w[k:e]) {
					// A memory address is the run's, not a thing
					// (probe.go, memoryAddress).
					sum += hashBytes(w[k:e]) | 1
				}
				k = e
			}
		}
		i = j
	}
	return sum
}

// holdsDate reports whether w holds a date, yyyy-mm-dd.
func holdsDate(w []byte) bool {
	for i := 0; i+10 <= len(w); i++ {
		b := w[i : i+10]
		if b[4] == '-' && b[7] == '-' && isDigit(b[0]) && isDigit(b[1]) && isDigit(b[2]) && isDigit(b[3]) && isDigit(b[5]) && isDigit(b[6]) && isDigit(b[8]) && isDigit(b[9]) {
			return true
		}
	}
	return false
}

func isPathByte(c byte) bool { return isTokenByte(c) || c == '/' || c == '.' }

// idWord reports whether token w is an id: six bytes or more, letters and
// digits, not an amount (600ms, 12GB).
func idWord(w []byte) bool {
	if len(w) < 6 {
		return false
	}
	d, letters := 0, 0
	for _, c := range w {
		switch {
		case isDigit(c):
			d++
		case asciiLetter(c):
			letters++
		}
	}
	if d == 0 || letters == 0 {
		return false
	}
	n := 0
	for n < len(w) && isDigit(w[n]) {
		n++
	}
	return !(n > 0 && len(w)-n <= 2)
}
