package loops

import "bytes"

// An answer that differs from the last only in what the call itself sent
// is not new. A read asked again with only its counters moved (a thought
// numbered anew, its text the same) or with only an address's query or
// trailing slash changed (one page under tracking parameters), whose
// answer is the last one but for the values it echoes of its arguments
// (the counters, the address), is the same call made again.

const (
	maxEchoArgs = 8 // argument values looked for in an answer
)

// echoStreak is a tool's answers in a row, each the last but for its
// echoes, to calls of one shape.
type echoStreak struct {
	shape uint64   // echoShape of the calls
	path  filePath // the last call's path, when its shape has one
	ans   uint64   // the answer with its echoes masked
	count int
	agent uint64
	epoch uint64
	last  string
}

// moving is what a call of one shape may move: its numbers (those
// echoShape leaves out), its date-times and its web addresses, as written.
type moving struct {
	nums  [maxEchoArgs]uint64
	times [maxEchoArgs]uint64 // the hashes of its date-times' values
	urls  [maxEchoArgs][]byte
	nn    int
	nt    int
	nu    int
	path  filePath // its one file path, respelled (filePathOf)
	// cursor says that it moved a page's cursor: the answer's own cursor
	// (the next page's) is then what it echoes
	cursor bool
}

const maxPathParts = 8 // components of a path compared from its end

// filePath is a file path as its components, from its end: suf[k-1] hashes
// its last k components, "." and empty ones left out and ".." taken back
// ("config//./app.yaml" and "config/../config/app.yaml" are
// "config/app.yaml"). n is 0 for no path.
type filePath struct {
	suf [maxPathParts]uint64
	n   uint8
	abs bool
}

// filePathOf reads v as a path: a string with a slash, no space, no
// scheme and no glob, of at most maxPathParts components.
func filePathOf(v []byte) (k filePath) {
	if len(v) < 2 || len(v) > 512 || bytes.IndexByte(v, '/') < 0 || bytes.IndexAny(v, " *?") >= 0 || bytes.Contains(v, []byte("://")) {
		return k
	}
	var parts [maxPathParts][]byte
	n := 0
	for rest := v; ; {
		c := rest
		i := bytes.IndexByte(rest, '/')
		if i >= 0 {
			c, rest = rest[:i], rest[i+1:]
		}
		switch {
		case len(c) == 0 || string(c) == ".":
		case string(c) == ".." && n > 0 && string(parts[n-1]) != "..":
			n--
		case n == maxPathParts:
			return filePath{}
		default:
			parts[n] = c
			n++
		}
		if i < 0 {
			break
		}
	}
	if n == 0 {
		return k
	}
	k.abs, k.n = v[0] == '/', uint8(n)
	h := uint64(0x70617468)
	for i := 0; i < n; i++ {
		h = mix(hashBytes(parts[n-1-i]), h)
		k.suf[i] = h
	}
	return k
}

// sameFile reports whether paths p and q name one file as far as their
// spelling tells: the same components, or a relative path that is the end
// of an absolute one ("config/app.yaml", "/srv/app/config/app.yaml"; the
// tool's directory is where the relative one starts).
func sameFile(p, q *filePath) bool {
	if p.n == 0 || q.n == 0 {
		return false
	}
	if p.abs == q.abs {
		return p.n == q.n && p.suf[p.n-1] == q.suf[q.n-1]
	}
	r, a := p, q
	if r.abs {
		r, a = q, p
	}
	return r.n <= a.n && r.suf[r.n-1] == a.suf[r.n-1]
}

// echoShape hashes arguments with what a call may move without asking
// another thing left out (and kept in m, when m is not nil): numbers, but
// those under a key that names an identifier or a position (id, page,
// offset: another thing, another place), date-times with a time of day
// (a window shifted an hour, the same calendar asked), and a web
// address's query and trailing slash. ok says whether the call keeps
// something it asks about while those move: a free text (a thought, a
// question), a web address, or beside date-times any string (the calendar
// asked). A call of numbers alone (seat 1, seat 2) is a batch, and has no
// shape; so has one of date-times alone.
func (d *Detector) echoShape(args []byte, m *moving) (shape uint64, ok bool) {
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0, false
	}
	return echoShapeOf(as.out, m)
}

// echoShapeOf is echoShape of the scanned arguments as. A call with one
// file path moves its spelling ("./config/app.yaml", its absolute path):
// its shape keeps the file's name, and a streak asks each path to name
// the last one's file (sameFile).
func echoShapeOf(as []leaf, m *moving) (shape uint64, ok bool) {
	var pk filePath
	at, paths := -1, 0
	for i := range as {
		if as[i].kind == leafString && bytes.IndexByte(as[i].raw, '/') >= 0 && !isWebAddress(as[i].raw) {
			if k := filePathOf(as[i].raw); k.n > 0 {
				pk, at = k, i
				paths++
			}
		}
	}
	if paths != 1 {
		pk, at = filePath{}, -1
	}
	if m != nil {
		m.path = pk
	}
	times, kept, cursor := false, false, false
	for i := range as {
		l := &as[i]
		switch {
		case l.kind == leafString && cursorKey(l.key):
			shape += mix(l.path, 0x63757273)
			cursor = true
			if m != nil {
				m.cursor = true
			}
		case l.kind == leafString && !l.id && len(l.raw) >= 16 && dateTimeLen(l.raw) == len(l.raw):
			// Its date stays: a window shifted over one day asks that
			// day again, windows on other days ask of other days (a
			// slot looked for day by day), as dates alone do.
			shape += mix(l.path, mix(0x74696d65, hashBytes(l.raw[:10])))
			times = true
			if m != nil && m.nt < len(m.times) {
				m.times[m.nt] = l.val
				m.nt++
			}
		case i == at:
			shape += mix(l.path, pk.suf[0])
			ok = true
		case l.kind == leafNumber && !l.id:
			shape += mix(l.path, 0x6e756d)
			if m != nil && m.nn < len(m.nums) {
				m.nums[m.nn] = l.val
				m.nn++
			}
		case l.kind == leafString && isWebAddress(l.raw):
			shape += mix(l.path, mix(hashBytes(pageOf(l.raw)), queryIDs(l.raw)))
			ok = true
			if m != nil && m.nu < len(m.urls) {
				m.urls[m.nu] = l.raw
				m.nu++
			}
		default:
			if l.kind == leafString && bytes.IndexByte(l.raw, ' ') >= 0 {
				ok = true
			}
			kept = kept || l.kind == leafString
			shape += l.unit()
		}
	}
	return shape | 1, ok || times && kept || cursor
}

// caseFold writes key k into low in lower case without its '_' and '-'
// (so nextPageToken, next_page_token and next-page-token are one), and
// returns its length; false if it does not fit.
func caseFold(k, low []byte) (int, bool) {
	n := 0
	for _, c := range k {
		switch {
		case c == '_' || c == '-':
			continue
		case n == len(low):
			return 0, false
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		low[n] = c
		n++
	}
	return n, true
}

// cursorKey reports whether key k names a page's cursor, an opaque token
// that says where a listing goes on (cursor, next_cursor, pageToken,
// nextPageToken, starting_after, continuation_token, marker, or "next"
// alone, as collection APIs hand the next page's cursor back:
// TestCursorUnderNext), in any case style. An answer's cursors are read
// so only when its call moved one.
func cursorKey(k []byte) bool {
	var low [24]byte
	n, ok := caseFold(k, low[:])
	if !ok {
		return false
	}
	switch string(low[:n]) {
	case "cursor", "nextcursor", "pagecursor", "endcursor", "pagetoken", "nextpagetoken", "nexttoken", "startingafter", "continuationtoken", "continuation", "marker", "nextmarker", "next":
		return true
	}
	return false
}

// holdsCursor is a quick look for a key that may name a cursor in
// canonical arguments.
func holdsCursor(args []byte) bool {
	return bytes.Contains(args, []byte(`ursor"`)) || bytes.Contains(args, []byte(`oken"`)) || bytes.Contains(args, []byte(`fter"`)) ||
		bytes.Contains(args, []byte(`arker"`)) || bytes.Contains(args, []byte(`ation"`))
}

// holdsDateTime is a quick look for a date-time's "yyyy-mm-ddThh:" in
// canonical arguments.
func holdsDateTime(args []byte) bool {
	for i := 10; i+3 < len(args); i++ {
		if args[i] == 'T' && args[i-3] == '-' && isDigit(args[i-1]) && isDigit(args[i+1]) && isDigit(args[i+2]) && args[i+3] == ':' {
			return true
		}
	}
	return false
}

func isWebAddress(v []byte) bool {
	return len(v) > 8 && (bytes.HasPrefix(v, []byte("https://")) || bytes.HasPrefix(v, []byte("http://")))
}

// pageOf is web address v without its scheme, fragment, query and trailing
// slash: the page it names.
func pageOf(v []byte) []byte {
	v = webAddress(v)
	if i := bytes.IndexByte(v, '?'); i >= 0 {
		v = v[:i]
	}
	return bytes.TrimRight(v, "/")
}

// queryIDs hashes the parameters of web address v's query that name the
// thing shown by its id (gid=, node-id=, pageId=, id=: a key that ends in
// "id"), in their order; 0 for none. They pick another tab, frame or
// record of one page, as its path would: a workbook's tabs or a design
// file's frames fetched one by one, answered alike, are other things
// asked. A click's id (fbclid, gclid: "clid"), a campaign's (utm_id,
// mc_cid) and a session's follow a visitor, not what is shown, and move
// as tracking parameters do.
func queryIDs(v []byte) uint64 {
	i := bytes.IndexByte(v, '?')
	if i < 0 {
		return 0
	}
	q := v[i+1:]
	if j := bytes.IndexByte(q, '#'); j >= 0 {
		q = q[:j]
	}
	var h uint64
	for len(q) > 0 {
		p := q
		if j := bytes.IndexByte(q, '&'); j >= 0 {
			p, q = q[:j], q[j+1:]
		} else {
			q = nil
		}
		eq := bytes.IndexByte(p, '=')
		if eq <= 0 || eq == len(p)-1 {
			continue
		}
		var low [24]byte
		n, ok := caseFold(p[:eq], low[:])
		k := low[:n]
		if !ok || !bytes.HasSuffix(k, []byte("id")) || bytes.HasSuffix(k, []byte("clid")) ||
			bytes.HasPrefix(k, []byte("utm")) || bytes.HasPrefix(k, []byte("mc")) || bytes.Contains(k, []byte("session")) || string(k) == "sid" {
			continue
		}
		h = mix(h+1, mix(hashBytes(k), hashBytes(p[eq+1:])))
	}
	return h
}

// echoAnswer hashes the pieces of an answer with what they echo of what
// the call moved (m) left out: a number equal to one of its numbers, a
// value equal to one of its date-times, one of its web addresses inside a
// line, and when it moved a cursor, the answer's own cursor (the next
// page's: a server that ignores the cursor hands the same page and a new
// cursor each time). What the call did not move is the
// same in every call of its shape, echoed or not. It returns 0 when the
// answer holds nothing.
func echoAnswer(m *moving, ans []leaf) uint64 {
	if len(ans) == 0 {
		return 0
	}
	var h uint64
	kept := 0  // leaves other than the next page's cursor
	named := 0 // those of them that are not true, false or null
	for i := range ans {
		l := &ans[i]
		v := l.val
		if m.cursor && cursorKey(l.key) {
			h += mix(l.path, 0x63757273)
			continue
		}
		kept++
		if l.kind != leafLiteral {
			named++
		}
		switch l.kind {
		case leafNumber:
			for _, x := range m.nums[:m.nn] {
				if x == v {
					v = 0x6563686f
					break
				}
			}
		case leafString:
			for _, x := range m.times[:m.nt] {
				if x == v {
					v = 0x6563686f
					break
				}
			}
			for _, u := range m.urls[:m.nu] {
				if j := bytes.Index(l.raw, u); j >= 0 {
					v = mix(hashBytes(l.raw[:j]), hashBytes(l.raw[j+len(u):]))
					break
				}
			}
		}
		h += mix(l.path, v)
	}
	if (m.cursor || m.nt > 0) && kept < 2 || m.cursor && named == 0 {
		// A listing with nothing in it but its cursor and a flag (a
		// feed polled), or a window's answer of one line ("No logs
		// found between ... and ...": hours searched one by one for
		// where something starts): nothing named, nothing to go round.
		// So is an empty page with only flags beside its cursor
		// ({"ok": true, "has_more": true}: a listing filtered on the
		// server, pages of which hold nothing), whatever their number
		// (TestCursorEmptyPagesWithMore).
		return 0
	}
	return h | 1
}

// doneEcho counts read s's answer (sc) in the tool's streak of answers
// that differ only in their echoes. ec is the arguments' echoes when
// they were scanned for them (computed says so).
func (d *Detector) doneEcho(a *agentState, t *toolState, s *Step, o *Outcome, sc *scan, ec *echoes, computed bool) {
	e := &t.echo
	if o.Error || isWrite(s.Access) || sc.cut || len(s.Args) > maxChainArgs {
		e.count = 0
		return
	}
	if !computed {
		if bytes.IndexByte(s.Args, '/') < 0 && !holdsDateTime(s.Args) && !holdsCursor(s.Args) {
			// Neither a free text, an address, a path, a date-time nor
			// a cursor (echoShape's ok): not scanned again.
			e.count = 0
			return
		}
		x := d.echoes(s.Args)
		ec = &x
	}
	if !ec.shaped {
		e.count = 0
		return
	}
	shape := ec.shape
	ans := echoAnswer(&ec.mv, sc.out)
	if ans == 0 {
		e.count = 0
		return
	}
	if e.count > 0 && e.shape == shape && e.ans == ans && e.agent == a.id && e.epoch == d.epoch &&
		(e.path.n == 0 && ec.mv.path.n == 0 || sameFile(&e.path, &ec.mv.path)) {
		e.count++
		e.path = ec.mv.path
	} else {
		*e = echoStreak{shape: shape, ans: ans, count: 1, agent: a.id, epoch: d.epoch, path: ec.mv.path}
	}
	if e.count >= d.cfg.rephraseMax {
		e.last = preview(o.Result) // quoted by a refusal: made only when one may come
	}
}

// checkEcho refuses read s when the tool's last answers, more than
// RephraseMax of them, were each the one before but for their echoes,
// and s is a call of their shape again.
func (d *Detector) checkEcho(a *agentState, t *toolState, s *Step) *Verdict {
	e := &t.echo
	max := d.cfg.rephraseMax
	if max == 0 || e.count <= max || isWrite(s.Access) || e.agent != a.id || e.epoch != d.epoch {
		return nil
	}
	var m moving
	if shape, ok := d.echoShape(s.Args, &m); !ok || shape != e.shape || (e.path.n > 0 || m.path.n > 0) && !sameFile(&e.path, &m.path) {
		return nil
	}
	return &Verdict{
		Detector: "repeat",
		Message: s.Tool + " answered the last " + plural(e.count, "call", "calls") + " alike (" + e.last +
			"), but for what each echoed of its own arguments (counters, a time window, a page's cursor, an address's query, a path's spelling), and nothing was written since; " +
			s.Tool + " " + preview(s.Args) + " moves only those again and cannot return anything new.",
		Suggestion: "Changing a counter or an address's tracking parameters does not ask anything new: use the answer " +
			"you have, ask for something else, or tell the user what you found.",
	}
}
