package loops

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// This file cuts a canonical JSON value into leaves: the scalar values it holds,
// each with the path of object keys that leads to it (array positions are not
// part of a path, so a list that comes back reordered holds the same leaves).
// Long strings are cut into lines, so that a text that changed in one line
// shares its other lines with the old one. The scanner never panics, and
// never allocates but to grow the scratch buffer of a JSON document inside a
// string; input that is not JSON is treated as one plain text.

const (
	leafString = iota + 1
	leafNumber
	leafLiteral // true, false, null
)

const (
	maxScanDepth = 64
	maxScanBytes = 1 << 20 // larger values are taken as one opaque piece
)

// leaf is one scalar value of a JSON document.
type leaf struct {
	path uint64 // hash of the object keys leading here
	val  uint64 // hash of the value alone
	kind uint8
	arr  bool   // an element of a list
	id   bool   // under a key that names an identifier or a position (identKey)
	exch bool   // a token count beside a reply to free text: the exchange's (envelope.go)
	raw  []byte // the value as written (strings without their quotes); points into the input
	key  []byte // the object key it is under ("" in a list at the top); points into the input
}

// unit is a leaf's identity: its path and value together.
func (l *leaf) unit() uint64 { return mix(l.path, l.val) }

// scan is the state of one pass over a document.
type scan struct {
	b     []byte
	i     int
	out   []leaf
	limit int  // most leaves kept
	lines bool // cut strings into lines
	cut   bool // leaves were dropped (limit reached or input too large)

	text   int       // bytes of string content seen (outside metadata)
	digest uint64    // the document's substance (see value)
	skip   int       // > 0 while inside fetch metadata (a result's volatile key)
	vol    *keyCache // keys known to name metadata, or nil
	asked  bool      // the call asked in free text: a reply's token counts are the exchange's
	exch   int       // > 0 while inside such counts (their leaves marked exch)
	a2a    int       // an A2A task or message: a2aTop, a2aWrapped (a2a.go), or 0
	a2aAt  uint64    // the path of its object
}

const (
	sigObject = 0x6f626a
	sigArray  = 0x617272
	sigString = 0x737472
	sigEmpty  = 0x656d70
)

// scanLeaves scans b into out (reset first) and returns the scan with its
// result. With lines set, b is a result: its strings are cut into lines,
// and fetch metadata (what is under a volatileKey, date-times and random
// tokens inside strings) is left out of its leaves and its digest.
func scanLeaves(b []byte, out []leaf, limit int, lines bool) scan {
	s := scan{b: b, out: out[:0], limit: limit, lines: lines}
	if len(b) == 0 {
		s.digest = sigEmpty
		return s
	}
	if len(b) > maxScanBytes {
		s.cut = true
		s.text = len(b)
		s.digest = hashBytes(b)
		s.add(leaf{path: 0, val: s.digest, kind: leafString})
		return s
	}
	s.scanAll()
	return s
}

// scanResult scans a result as scanLeaves does with lines set, knowing
// the keys of fetch metadata from the cache volatile. asked tells a call
// that asked in free text (Step.prose): its reply's token counts, the
// exchange's for a question reworded (envelope.go), are marked exch; a
// call that asks in none (a job polled by its id) has counts that are its
// answer alone.
func scanResult(b []byte, out []leaf, limit int, volatile *keyCache, scratch *[]byte, asked bool) scan {
	s := scan{b: b, out: out[:0], limit: limit, lines: true, vol: volatile, asked: asked}
	if len(b) == 0 || len(b) > maxScanBytes {
		return scanLeaves(b, out, limit, true)
	}
	if out := toolEnvelope(b); out != nil {
		// A tool's output in the envelope of its call: the call's id is
		// the exchange's, the output the answer (envelope.go).
		b = out
		s.b = b
	}
	if inner, ok := embeddedJSON(b, scratch); ok {
		// A JSON document handed to the model as a string (frameworks
		// that turn every tool result into text serialise it once more):
		// its members are the answer and its metadata, as unwrapped.
		t := scan{b: inner, out: out[:0], limit: limit, lines: true, vol: volatile, asked: asked}
		if d, ok := t.value(0, 0, false, false, nil); ok && t.ws() >= len(inner) {
			t.digest = d
			return t
		}
	}
	s.scanAll()
	return s
}

// embeddedJSON reports whether b is a JSON string whose text is an object
// or a list, and if so unescapes that text into scratch and returns it.
func embeddedJSON(b []byte, scratch *[]byte) ([]byte, bool) {
	if len(b) < 4 || b[0] != '"' || b[len(b)-1] != '"' {
		return nil, false
	}
	c := b[1 : len(b)-1]
	for len(c) > 0 && c[0] == ' ' {
		c = c[1:]
	}
	if len(c) == 0 || c[0] != '{' && c[0] != '[' {
		return nil, false
	}
	out := (*scratch)[:0]
	for i := 0; i < len(c); i++ {
		if c[i] != '\\' {
			if c[i] == '"' {
				return nil, false // not one string
			}
			out = append(out, c[i])
			continue
		}
		if i++; i >= len(c) {
			return nil, false
		}
		switch c[i] {
		case '"', '\\', '/':
			out = append(out, c[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := unicodeEscape(c[i+1:])
			if n == 0 {
				return nil, false
			}
			out = utf8.AppendRune(out, r)
			i += n
		default:
			return nil, false
		}
	}
	*scratch = out
	return out, true
}

// unicodeEscape reads the four hex digits after "\u" (and a low surrogate's
// "\uXXXX" after a high one) and returns the rune and the bytes read.
func unicodeEscape(b []byte) (rune, int) {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 4 {
			return 0, false
		}
		var r rune
		for _, c := range b[:4] {
			switch {
			case isDigit(c):
				r = r<<4 | rune(c-'0')
			case 'a' <= c && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case 'A' <= c && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	r, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) && len(b) >= 10 && b[4] == '\\' && b[5] == 'u' {
		if r2, ok := hex4(b[6:]); ok {
			if dr := utf16.DecodeRune(r, r2); dr != utf8.RuneError {
				return dr, 10
			}
		}
	}
	return r, 4
}

func (s *scan) scanAll() {
	d, ok := s.value(0, 0, false, false, nil)
	if !ok || s.ws() < len(s.b) {
		// Not JSON: one plain text.
		s.out, s.text, s.cut, s.skip, s.i = s.out[:0], 0, false, 0, len(s.b)
		d = s.str(0, s.b, false, false, nil)
	}
	s.digest = d
}

// volatile reports whether a result's key (with hash kh) names metadata,
// the value at s.i being the key's.
func (s *scan) volatile(k []byte, kh uint64) bool {
	var kind uint8
	if s.vol == nil {
		kind = volatileKind(k)
	} else {
		kind = s.vol.kind(k, kh)
	}
	return kind == keyMeta || kind == keyMetaTime && s.dateTimeAhead()
}

// mailAhead reports whether the members of the object whose '{' was just
// read are the headers of an e-mail (From, To, Subject, Message-ID), not
// of an HTTP answer: a message's Date is when it was sent, the answer's,
// and a new message that says what the last one said is news. It reads
// the members whose values are strings, up to the first that is not; it
// moves nothing.
func (s *scan) mailAhead() bool {
	i := s.i
	defer func() { s.i = i }()
	for n := 0; n < 64; n++ {
		s.ws()
		k, ok := s.quoted()
		if !ok || !s.eat(':') {
			return false
		}
		if len(k) <= 12 {
			var low [12]byte
			for j, c := range k {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				low[j] = c
			}
			switch string(low[:len(k)]) {
			case "from", "to", "cc", "subject", "message-id", "in-reply-to":
				return true
			}
		}
		s.ws()
		if _, ok := s.quoted(); !ok || !s.eat(',') {
			return false
		}
	}
	return false
}

// dateTimeAhead reports whether the value at s.i is a string that is one
// date-time and nothing else, or a number that is an instant since the
// Unix epoch in seconds or milliseconds (epochLen); it reads nothing.
func (s *scan) dateTimeAhead() bool {
	i := s.i
	s.ws()
	if s.i < len(s.b) && isDigit(s.b[s.i]) {
		n := epochLen(s.b[s.i:])
		s.i = i
		return n > 0
	}
	raw, ok := s.quoted()
	s.i = i
	return ok && len(raw) > 0 && dateTimeLen(raw) == len(raw)
}

// keyCache remembers what keys say of their values (volatileKind), at
// most 1024 of them.
type keyCache map[uint64]uint8

func (c *keyCache) kind(k []byte, kh uint64) uint8 {
	if v, ok := (*c)[kh]; ok {
		return v
	}
	if *c == nil || len(*c) >= 1024 {
		*c = make(keyCache, 64)
	}
	v := volatileKind(k)
	(*c)[kh] = v
	return v
}

func (s *scan) add(l leaf) {
	if s.skip > 0 {
		return // metadata: not a piece of the answer
	}
	if len(s.out) >= s.limit {
		s.cut = true
		return
	}
	l.exch = s.exch > 0
	s.out = append(s.out, l)
}

// ws skips white space and returns the position reached.
func (s *scan) ws() int {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return s.i
		}
	}
	return s.i
}

func (s *scan) eat(c byte) bool {
	if s.ws() < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// value scans the value at s.i, adds its leaves, and returns its digest:
// a hash of its substance in which the members of an object and the
// elements of a list are summed, so that neither key order nor list order
// matter, and in which a result's metadata counts for nothing.
func (s *scan) value(path uint64, depth int, arr, id bool, key []byte) (uint64, bool) {
	if depth > maxScanDepth || s.ws() >= len(s.b) {
		return 0, false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		sum := uint64(sigObject)
		if s.eat('}') {
			return mix(sum, 0), true
		}
		headers := s.lines && headersKey(key) && !s.mailAhead()
		envelope := 0
		if s.lines && depth == 0 {
			envelope = modelEnvelope(s.b)
			s.a2a, s.a2aAt = a2aShape(s.b), path
		}
		for {
			s.ws()
			k, ok := s.quoted()
			if !ok || !s.eat(':') {
				return 0, false
			}
			kh := hashBytes(k)
			meta := s.lines && (s.volatile(k, kh) || headers && volatileHeader(k) || envelope == fullEnvelope && envelopeKey(k) ||
				s.a2a != 0 && a2aKey(k, depth == 0 || path == s.a2aAt))
			// A reply's token counts stay in the digest and the leaves
			// (a job polled by its id: the counts growing are its news),
			// marked for the rephrase rule alone.
			exch := envelope == usageReply && s.asked && string(k) == "usage"
			if s.lines {
				kh = expressionKey(k, kh)
			}
			kp := mix(path, kh)
			if s.a2a == a2aWrapped && depth == 0 && string(k) == "result" {
				s.a2aAt = kp // a JSON-RPC response's result: the task
			}
			if meta {
				s.skip++
			}
			if exch {
				s.exch++
			}
			d, ok := s.value(kp, depth+1, false, !s.lines && identKey(k), k) // only arguments widen
			if exch {
				s.exch--
			}
			if meta {
				s.skip--
			} else {
				sum += mix(kh, d)
			}
			if !ok {
				return 0, false
			}
			if s.eat(',') {
				continue
			}
			if s.eat('}') {
				return mix(sum, sigObject), true
			}
			return 0, false
		}
	case c == '[':
		s.i++
		sum := uint64(sigArray)
		if s.eat(']') {
			return mix(sum, 0), true
		}
		ep := mix(path, sigArray)
		for {
			d, ok := s.value(ep, depth+1, true, id, key)
			if !ok {
				return 0, false
			}
			sum += mix(d, sigArray)
			if s.eat(',') {
				continue
			}
			if s.eat(']') {
				return mix(sum, sigArray), true
			}
			return 0, false
		}
	case c == '"':
		raw, ok := s.quoted()
		if !ok {
			return 0, false
		}
		return s.str(path, raw, arr, id, key), true
	case c == '-' || (c >= '0' && c <= '9'):
		j := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '-', '+', '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				s.i++
				continue
			}
			break
		}
		raw := s.b[j:s.i]
		v := hashBytes(raw)
		if s.skip == 0 {
			s.text += len(raw)
		}
		s.add(leaf{path: path, val: v, kind: leafNumber, arr: arr, id: id, raw: raw, key: key})
		return v, true
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				raw := s.b[s.i : s.i+len(lit)]
				s.i += len(lit)
				v := hashBytes(raw)
				s.add(leaf{path: path, val: v, kind: leafLiteral, arr: arr, raw: raw, key: key})
				return v, true
			}
		}
		return 0, false
	}
}

// quoted reads a JSON string at s.i and returns its content as written.
func (s *scan) quoted() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	j := s.i + 1
	for k := j; k < len(s.b); {
		q := bytes.IndexByte(s.b[k:], '"')
		if q < 0 {
			return nil, false
		}
		k += q
		n := 0 // backslashes right before the quote
		for m := k - 1; m >= j && s.b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			s.i = k + 1
			return s.b[j:k], true
		}
		k++
	}
	return nil, false
}

// str adds a string's leaves, and returns its digest: in a result, each
// non-blank line of it (a line ends at a written "\n" escape or a raw
// newline) is a leaf, hashed with its date-times and random tokens masked,
// and the digest is that of its lines in order.
func (s *scan) str(path uint64, raw []byte, arr, id bool, key []byte) uint64 {
	if !s.lines {
		s.text += len(raw)
		h := hashBytes(raw)
		if len(raw) > 0 {
			s.add(leaf{path: path, val: h, kind: leafString, arr: arr, id: id, raw: raw, key: key})
		}
		return h
	}
	if s.skip > 0 {
		return 0
	}
	d := uint64(sigString)
	head := httpStatusLine(raw) // in an HTTP response's header lines
	for len(raw) > 0 {
		end, next := lineEnd(raw)
		line := trim(raw[:end])
		if len(line) == 0 {
			head = false // the blank line after the headers
		} else {
			s.text += len(line)
			var v uint64
			if name := headerName(line, head); name != nil && volatileHeader(name) {
				// A header that names the exchange (Date,
				// X-Request-Id): masked, as under a "headers" key
				// (TestHTTPResponseHeadLines).
				v = mix(hashBytes(name), 0x68656164)
			} else {
				v = maskedHash(line)
			}
			d = mix(d, v)
			s.add(leaf{path: path, val: v, kind: leafString, arr: arr, id: id, raw: line, key: key})
		}
		raw = raw[next:]
	}
	return d
}

// httpStatusLine reports whether text raw starts with an HTTP response's
// status line ("HTTP/1.1 200 OK", "HTTP/2 503"): the lines after it, up
// to a blank one, are its headers.
func httpStatusLine(raw []byte) bool {
	if !bytes.HasPrefix(raw, []byte("HTTP/")) {
		return false
	}
	i := 5
	for i < len(raw) && (isDigit(raw[i]) || raw[i] == '.') {
		i++
	}
	return i > 5 && i+4 <= len(raw) && raw[i] == ' ' && isDigit(raw[i+1]) && isDigit(raw[i+2]) && isDigit(raw[i+3])
}

// headerName is the name of header line l ("Date" of "Date: Mon, ..."),
// nil when l is none (or head is false: l is not in a header block): a
// name of letters, digits and '-' before ": ".
func headerName(l []byte, head bool) []byte {
	if !head {
		return nil
	}
	i := bytes.IndexByte(l, ':')
	if i <= 0 || i > 64 {
		return nil
	}
	for _, c := range l[:i] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c == '-') {
			return nil
		}
	}
	return l[:i]
}

// lineEnd returns where the first line of raw ends, and where the next begins.
// One pass over the bytes: bytes.IndexAny walks a short string rune by
// rune, and builds its set of bytes anew for a long one, at every line.
func lineEnd(raw []byte) (end, next int) {
	for k := 0; k < len(raw); k++ {
		switch raw[k] {
		case '\n':
			return k, k + 1
		case '\\':
			if k+1 < len(raw) && raw[k+1] == 'n' {
				return k, k + 2
			}
			k++ // an escaped byte
		}
	}
	return len(raw), len(raw)
}

// trim cuts blanks (and written \r, \t escapes) from both ends of a line.
func trim(b []byte) []byte {
	for {
		switch {
		case len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r'):
			b = b[1:]
		case len(b) > 1 && b[0] == '\\' && (b[1] == 'r' || b[1] == 't'):
			b = b[2:]
		case len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r'):
			b = b[:len(b)-1]
		case len(b) > 1 && b[len(b)-2] == '\\' && (b[len(b)-1] == 'r' || b[len(b)-1] == 't'):
			b = b[:len(b)-2]
		default:
			return b
		}
	}
}

// identKey reports whether an object key names an identifier or a
// position rather than an amount: id, ids, user_id, orderId, page, offset,
// cursor. A value under such a key that changes names another thing or
// another place; it never widens a call.
func identKey(k []byte) bool {
	n := len(k)
	if n >= 2 && k[n-2] == 'I' && (k[n-1] == 'd' || k[n-1] == 'D') { // orderId, orderID
		return true
	}
	if n >= 3 && k[n-3] == 'I' && (k[n-2] == 'd' || k[n-2] == 'D') && (k[n-1] == 's' || k[n-1] == 'S') { // orderIds
		return true
	}
	var low [32]byte
	if n > len(low) {
		return false
	}
	for i, c := range k {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	l := string(low[:n]) // no allocation: compared, not kept
	switch l {
	case "id", "ids", "uid", "uuid", "key", "ref", "page", "offset", "cursor", "index", "skip":
		return true
	}
	for _, suf := range [...]string{"_id", "-id", "_ids", "-ids", "_key", "_ref", "_page", "_offset", "_index"} {
		if len(l) > len(suf) && l[len(l)-len(suf):] == suf {
			return true
		}
	}
	return false
}
