package loops

import (
	"bytes"
	"strconv"
)

const (
	maxArgLeaves  = 32 // argument leaves compared for widening
	maxChainUnits = 64 // result pieces remembered of a widening chain's last result
)

// echoes are the argument values that a result may merely repeat: numbers
// (a count equal to the limit asked for) and free text (a query, which has a
// space in it, or is written in a script without spaces). Identifiers (strings without a space) are not echoes: a result
// that names a new entity tells something new about it.
//
// In the same pass it finds the arguments' echoShape and what they may
// move (shape, shaped, mv), for the streak of answers that only echo.
type echoes struct {
	nums [maxArgLeaves]uint64
	text [maxArgLeaves]uint64
	nn   int
	nt   int

	shape  uint64
	shaped bool
	mv     moving

	raw [maxEchoed][]byte // the free texts as written, to find inside a result's lines (maskEchoes)
	nr  int
}

const (
	maxEchoed   = 4    // free texts of one call looked for inside a result's lines
	minEchoed   = 6    // bytes of a free text for it to be looked for there
	maxEchoLine = 4096 // bytes of a result's line searched for one
)

func (d *Detector) echoes(args []byte) echoes {
	var e echoes
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if !as.cut {
		e.shape, e.shaped = echoShapeOf(as.out, &e.mv)
	}
	for _, l := range as.out {
		switch {
		case l.kind == leafNumber && e.nn < len(e.nums):
			e.nums[e.nn] = l.val
			e.nn++
		case l.kind == leafString && e.nt < len(e.text) && (bytes.IndexByte(l.raw, ' ') >= 0 || proseArg(l.key, l.raw)):
			e.text[e.nt] = maskedHash(l.raw) // as the result's strings are hashed
			e.nt++
			if len(l.raw) >= minEchoed && e.nr < len(e.raw) {
				e.raw[e.nr] = l.raw // points into the arguments, which outlive the result's pass
				e.nr++
			}
		}
	}
	return e
}

// maskEchoes rehashes each line of a result (its leaves out) that quotes
// one of the call's free texts beside other words, with the quoted text
// cut out: a vector store's or a search engine's "Results for the query
// '...'" says what the agent asked, in its own words, and an answer to a
// rewording whose other lines are the last answer's is that answer again.
// Only quoted: a ticket's subject that happens to hold the query's words
// is the ticket's. A line that is the text alone is isText's. buf is
// scratch.
func (e *echoes) maskEchoes(out []leaf, buf *[]byte) {
	if e.nr == 0 {
		return
	}
	for i := range out {
		l := &out[i]
		if l.kind != leafString || len(l.raw) > maxEchoLine {
			continue
		}
		for _, t := range e.raw[:e.nr] {
			j, n := quotedIndex(l.raw, t)
			if j < 0 {
				j, n = queryParamIndex(l.raw, t)
			}
			if j < 0 {
				continue
			}
			b := append(append((*buf)[:0], l.raw[:j]...), 0)
			b = append(b, l.raw[j+n:]...)
			l.val = maskedHash(b)
			*buf = keepScratch(b)
			break
		}
	}
}

func (e *echoes) isNum(v uint64) bool {
	for _, x := range e.nums[:e.nn] {
		if x == v {
			return true
		}
	}
	return false
}

func (e *echoes) isText(v uint64) bool {
	for _, x := range e.text[:e.nt] {
		if x == v {
			return true
		}
	}
	return false
}

// widens reports whether args widens prev: the same argument fields with the
// same values, except that something grew and nothing else changed. Growing
// is a number multiplied by at least WidenFactor (also a number with a unit,
// "7d" to "30d"), a string that contains the old string and is longer, or a
// list with more elements that keeps the old ones.
func (d *Detector) widens(prev, args []byte) bool {
	if bytes.Equal(prev, args) {
		return false
	}
	ps := scanLeaves(prev, d.prev[:0], maxArgLeaves, false)
	d.prev = ps.out[:0]
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	p, a := ps.out, as.out
	if ps.cut || as.cut || len(a) == 0 || len(a) < len(p) {
		return false
	}
	if len(a) > len(p) {
		return listGrew(p, a)
	}
	grew := false
	for i := range a {
		if p[i].path != a[i].path || p[i].kind != a[i].kind {
			return false
		}
		if p[i].val == a[i].val {
			continue
		}
		if !d.grows(p[i].kind, p[i].id, p[i].key, p[i].raw, a[i].raw) {
			return false
		}
		grew = true
	}
	return grew
}

// grows reports whether value y grew from x. An identifier or a
// position (identKey) that changed is another call, never a wider one.
func (d *Detector) grows(kind uint8, id bool, key, x, y []byte) bool {
	if id {
		return false
	}
	if kind == leafString && isoDate(x) && isoDate(y) && len(x) == len(y) {
		// A range's bound that moved outwards: a lower bound to an
		// earlier date, an upper bound to a later one (ISO dates sort as
		// written). A bound that moved the other way (the next page of a
		// listing by date) is another range, not a wider one.
		switch c := bytes.Compare(y, x); rangeBound(key) {
		case lowerBound:
			return c < 0
		case upperBound:
			return c > 0
		}
		return false
	}
	switch kind {
	case leafNumber:
		fx, err1 := strconv.ParseFloat(string(x), 64)
		fy, err2 := strconv.ParseFloat(string(y), 64)
		return err1 == nil && err2 == nil && fx > 0 && fy >= fx*d.cfg.widenFactor
	case leafString:
		if nx, ny, ok := quantities(x, y); ok {
			return nx > 0 && ny >= nx*d.cfg.widenFactor
		}
		if ox, oy, ok := grownNumber(x, y); ok {
			// Code or a command that asks for more of one thing:
			// df.sample(1000) to df.sample(5000), LIMIT 100 to LIMIT
			// 1000. A step by one (page 2 to page 3) is another place.
			fx, err1 := strconv.ParseFloat(string(ox), 64)
			fy, err2 := strconv.ParseFloat(string(oy), 64)
			return err1 == nil && err2 == nil && fx > 0 && fy >= fx*d.cfg.widenFactor && fy-fx > 1
		}
		return len(y) > len(x) && bytes.Contains(y, x)
	}
	return false
}

// grownNumber reports whether strings x and y are the same but for one
// number standing alone (not part of a word: "sample(1000)", "LIMIT 100",
// not "v2"), and returns it as written in each.
func grownNumber(x, y []byte) (ox, oy []byte, ok bool) {
	if len(x) > maxChainArgs || len(y) > maxChainArgs {
		return nil, nil, false
	}
	i := 0
	for i < len(x) && i < len(y) && x[i] == y[i] {
		i++
	}
	for i > 0 && isDigit(x[i-1]) {
		i--
	}
	j := 0 // bytes in common at the end
	for j < len(x)-i && j < len(y)-i && x[len(x)-1-j] == y[len(y)-1-j] {
		j++
	}
	for j > 0 && isDigit(x[len(x)-j]) {
		j--
	}
	ox, oy = x[i:len(x)-j], y[i:len(y)-j]
	if len(ox) == 0 || len(oy) == 0 || len(ox) > 15 || len(oy) > 15 || !digits(ox) || !digits(oy) {
		return nil, nil, false
	}
	if i > 0 && (isLetter(rune(x[i-1])) || x[i-1] == '.' || x[i-1] == '_') ||
		j > 0 && (isLetter(rune(x[len(x)-j])) || x[len(x)-j] == '.' || x[len(x)-j] == '_') {
		return nil, nil, false
	}
	// Nor a part of a date, a time or a range of numbers (2026-12-01,
	// 14:02, 10/12): a day moved is another day.
	if i > 1 && (x[i-1] == '-' || x[i-1] == '/' || x[i-1] == ':') && isDigit(x[i-2]) ||
		j > 1 && (x[len(x)-j] == '-' || x[len(x)-j] == '/' || x[len(x)-j] == ':') && isDigit(x[len(x)-j+1]) {
		return nil, nil, false
	}
	return ox, oy, true
}

// grown finds the numbers that grew from the arguments prev to args (a
// widening), each as written before and after: the sample asked before
// and the one asked now.
func (d *Detector) grown(prev, args []byte, out [][2][]byte) [][2][]byte {
	ps := scanLeaves(prev, d.prev[:0], maxArgLeaves, false)
	d.prev = ps.out[:0]
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	p, a := ps.out, as.out
	if ps.cut || as.cut || len(a) != len(p) {
		return out
	}
	for i := range a {
		if p[i].val == a[i].val || p[i].path != a[i].path || p[i].kind != a[i].kind || len(out) == cap(out) {
			continue
		}
		switch p[i].kind {
		case leafNumber:
			out = append(out, [2][]byte{p[i].raw, a[i].raw})
		case leafString:
			if ox, oy, ok := grownNumber(p[i].raw, a[i].raw); ok {
				out = append(out, [2][]byte{ox, oy})
			}
		}
	}
	return out
}

// echoOf reports whether a line of a widening's answer is one the chain's
// last answer held, but for the grown numbers it echoes ("Scanned 5000
// sampled rows" after "Scanned 1000 sampled rows"): each number of the
// line that is one of them standing alone is put back as it was asked
// before, and the line looked up again.
func (t *toolState) echoOf(path uint64, line []byte, pairs [][2][]byte) bool {
	var buf [256]byte
	out, changed := buf[:0], false
	for i := 0; i < len(line); {
		if !isDigit(line[i]) || i > 0 && (isDigit(line[i-1]) || isLetter(rune(line[i-1]))) {
			out = append(out, line[i])
			i++
			continue
		}
		j := i
		for j < len(line) && isDigit(line[j]) {
			j++
		}
		num := line[i:j]
		if j == len(line) || !isLetter(rune(line[j])) {
			for _, p := range pairs {
				if bytes.Equal(num, p[1]) {
					num, changed = p[0], true
					break
				}
			}
		}
		out = append(out, num...)
		i = j
		if len(out) > len(buf) {
			return false // too long to look at on the stack: not an echo
		}
	}
	if !changed {
		return false
	}
	u := mix(path, maskedHash(out))
	for _, v := range t.units {
		if v == u {
			return true
		}
	}
	return false
}

// isoDate reports whether b starts with an ISO 8601 date (2026-03-01).
func isoDate(b []byte) bool {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return false
	}
	for _, k := range [...]int{0, 1, 2, 3, 5, 6, 8, 9} {
		if !isDigit(b[k]) {
			return false
		}
	}
	return true
}

const (
	noBound = iota
	lowerBound
	upperBound
)

// rangeBound says whether an argument's key names the lower bound of a
// range (since, from, after, start_date, date_gte) or its upper bound
// (until, to, before, end, max).
func rangeBound(k []byte) int {
	var kw keyWords
	kw.split(k)
	b := noBound
	for i := range kw.n {
		w := noBound
		switch string(kw.word(i)) {
		case "since", "from", "after", "start", "begin", "min", "gte", "gt", "oldest", "earliest":
			w = lowerBound
		case "until", "to", "before", "end", "max", "lte", "lt", "latest", "newest":
			w = upperBound
		}
		if w != noBound {
			if b != noBound && b != w {
				return noBound
			}
			b = w
		}
	}
	return b
}

// quantities reads x and y as two amounts of one kind and returns them in
// one unit: two numbers written as strings ("50", "100": models spell a
// limit either way), a number with the same unit ("7d", "30d"), or two
// spans of time in any units ("15m", "1h", "2 days"), after the same prefix
// when it ends in a separator ("now-15m", "now-1h"; not "v2", "v3").
func quantities(x, y []byte) (float64, float64, bool) {
	px, nx, ux, ok1 := splitQuantity(x)
	py, ny, uy, ok2 := splitQuantity(y)
	if !ok1 || !ok2 || !bytes.Equal(px, py) {
		return 0, 0, false
	}
	sx, okx := timeUnit(ux)
	sy, oky := timeUnit(uy)
	switch {
	case okx && oky:
		return nx * sx, ny * sy, true
	case len(px) == 0 && bytes.Equal(ux, uy):
		return nx, ny, true
	}
	return 0, 0, false
}

// splitQuantity splits "now-30d" into "now-", 30 and "d", and "7 days" into
// "", 7 and "days". A prefix must end in '-', '+' or a space.
func splitQuantity(b []byte) (prefix []byte, n float64, unit []byte, ok bool) {
	i := 0
	for i < len(b) && !isDigit(b[i]) {
		i++
	}
	if i > 0 && b[i-1] != '-' && b[i-1] != '+' && b[i-1] != ' ' {
		return nil, 0, nil, false
	}
	j := i
	for j < len(b) && (isDigit(b[j]) || b[j] == '.') {
		j++
	}
	if j == i || j-i > 15 {
		return nil, 0, nil, false
	}
	f, err := strconv.ParseFloat(string(b[i:j]), 64)
	return b[:i], f, bytes.TrimLeft(b[j:], " "), err == nil
}

// timeUnit returns the seconds in a unit of time as durations and relative
// windows write it ("m" is a minute and "M" a month, as in Grafana and
// Prometheus).
func timeUnit(u []byte) (float64, bool) {
	switch string(u) {
	case "M":
		return 30 * 86400, true
	}
	switch string(bytes.ToLower(u)) {
	case "s", "sec", "secs", "second", "seconds":
		return 1, true
	case "m", "min", "mins", "minute", "minutes":
		return 60, true
	case "h", "hr", "hrs", "hour", "hours":
		return 3600, true
	case "d", "day", "days":
		return 86400, true
	case "w", "wk", "wks", "week", "weeks":
		return 7 * 86400, true
	case "mo", "month", "months":
		return 30 * 86400, true
	case "y", "yr", "yrs", "year", "years":
		return 365 * 86400, true
	}
	return 0, false
}

// listGrew reports whether a (longer) holds every leaf of p, and its other
// leaves are list elements at a path p already has: a list that grew.
func listGrew(p, a []leaf) bool {
	for i := range p {
		found := false
		for j := range a {
			if a[j].path == p[i].path && a[j].val == p[i].val {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for j := range a {
		known, samePath := false, false
		for i := range p {
			samePath = samePath || a[j].path == p[i].path
			known = known || (a[j].path == p[i].path && a[j].val == p[i].val)
		}
		if !known && !(a[j].arr && samePath) {
			return false
		}
	}
	return true
}

// chain updates tool t's widening chain with the result of s. A widening
// brought no new answer when its result holds no piece of text that the
// chain's last result did not, and at most one new number (a count), not
// counting what merely echoes the arguments.
func (d *Detector) chain(t *toolState, s *Step, o *Outcome, sc *scan, e *echoes) {
	same := s.widen && t.hasBase && !t.cut && !sc.cut && len(sc.out) <= maxChainUnits &&
		t.epoch == s.epoch && sc.text > 0
	if same {
		freshText, freshNums, n := 0, 0, 0
		var pairBuf [4][2][]byte
		var pairs [][2][]byte
		looked := false
		for i := range sc.out {
			l := &sc.out[i]
			if l.kind == leafNumber && e.isNum(l.val) || l.kind == leafString && e.isText(l.val) {
				continue
			}
			n++
			u := l.unit()
			known := false
			for _, v := range t.units {
				if v == u {
					known = true
					break
				}
			}
			if !known && l.kind == leafString && isDigitIn(l.raw) {
				// A line that says the sample's size, grown as asked.
				if !looked {
					looked = true
					if bytes.Equal(t.args, s.Args) && t.prevArgs != nil {
						pairs = d.grown(t.prevArgs, s.Args, pairBuf[:0])
					}
				}
				known = len(pairs) > 0 && t.echoOf(l.path, l.raw, pairs)
			}
			if !known {
				if l.kind == leafNumber {
					freshNums++
				} else {
					freshText++
				}
			}
		}
		same = n > 0 && freshText == 0 && freshNums <= 1
	}
	if same {
		if t.stale == 0 {
			t.first = append(t.first[:0], s.Args...)
		}
		t.stale++
		t.last = preview(o.Result)
	} else {
		t.stale = 0
	}
	t.hasBase, t.epoch = true, s.epoch
	t.units = t.units[:0]
	t.cut = sc.cut || len(sc.out) > maxChainUnits
	if !t.cut {
		for i := range sc.out {
			t.units = append(t.units, sc.out[i].unit())
		}
	}
}

// isDigitIn reports whether b holds a digit.
func isDigitIn(b []byte) bool {
	for _, c := range b {
		if isDigit(c) {
			return true
		}
	}
	return false
}

// quotedIndex returns where text t stands quoted in line b (between ' ',
// " ", written \" \", or “ ”), and the length of the quoted text with its
// quotes, or -1.
func quotedIndex(b, t []byte) (int, int) {
	for off := 0; off < len(b); {
		j := bytes.Index(b[off:], t)
		if j < 0 {
			return -1, 0
		}
		j += off
		end := j + len(t)
		for _, q := range [...][2]string{{"'", "'"}, {`\"`, `\"`}, {`"`, `"`}, {"“", "”"}} {
			if bytes.HasSuffix(b[:j], []byte(q[0])) && bytes.HasPrefix(b[end:], []byte(q[1])) {
				return j - len(q[0]), len(t) + len(q[0]) + len(q[1])
			}
		}
		off = j + 1
	}
	return -1, 0
}

// queryParamIndex returns where free text t is the value of a parameter
// of an address's query in b, written as a URL writes it (spaces as '+'
// or %20, other bytes %-escaped: ?query=Bohemian+Rhapsody+Queen&type=...),
// and the length it is written in, or -1: a search's answer that links to
// itself under the query asked echoes that query in its link as another
// quotes it (TestEchoInQueryString). Only a parameter's whole value, after
// the address's '?': a link that holds the words among others is the
// answer's.
func queryParamIndex(b, t []byte) (int, int) {
	q := bytes.IndexByte(b, '?')
	if q < 0 || len(t) == 0 {
		return -1, 0
	}
	for p := q + 1; p < len(b); p++ {
		if b[p] != '=' {
			continue
		}
		k, i := p+1, 0
		for i < len(t) && k < len(b) {
			c := b[k]
			switch {
			case c == '+':
				c, k = ' ', k+1
			case c == '%' && k+2 < len(b) && isHex(b[k+1]) && isHex(b[k+2]):
				c, k = hexVal(b[k+1])<<4|hexVal(b[k+2]), k+3
			case c == '&' || c == '#':
				c = 0 // the value ended
			default:
				k++
			}
			if c != t[i] {
				break
			}
			i++
		}
		if i == len(t) && (k == len(b) || b[k] == '&' || b[k] == '#') {
			return p + 1, k - p - 1
		}
	}
	return -1, 0
}

func hexVal(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// keepScratch returns b emptied to be used again, or nil when it grew
// past maxScratch: a long line or argument list seen once keeps no buffer
// for the rest of the request.
func keepScratch(b []byte) []byte {
	if cap(b) > maxScratch {
		return nil
	}
	return b[:0]
}

const maxScratch = 512 // bytes of the echo scratch buffer kept between results
