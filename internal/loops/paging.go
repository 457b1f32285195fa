package loops

import (
	"bytes"
	"strconv"
)

// Paged past its end (loops21): a read whose one page position (offset,
// page, skip, start, startIndex, pageNumber) moves forward, every other
// argument as it was, and whose answer is the one before it (a search
// engine that answers its last page again at every later offset, a list
// that ignores a page number it does not support), brings nothing new
// however far it pages. Each page asks for something new, as a rewording
// does, so the streak is judged as rephrase judges rewordings: after
// RephraseMax+2 answers alike, the next page forward is refused. A page
// that brings other rows, a position that goes back (the first page read
// again) or another argument moved ends the streak; a poll of one page is
// repeat's to judge.

// pagingStreak is a tool's answers in a row, alike, to calls that moved
// only their page position forward.
type pagingStreak struct {
	shape uint64  // the calls' arguments but the position
	pos   float64 // the last call's position
	ans   uint64  // the answer's substance (scan digest)
	count int
	agent uint64
	epoch uint64
	last  string // the answer, quoted by a refusal
}

// holdsPageKey is a quick look for a key that may name a page position
// in canonical arguments, before any scan.
func holdsPageKey(args []byte) bool {
	for _, k := range [...]string{`ffset"`, `age"`, `kip"`, `tart"`, `ndex"`, `umber"`} {
		if bytes.Contains(args, []byte(k)) {
			return true
		}
	}
	return false
}

// pageKey reports whether key k names a page position: its last word is
// offset, page, skip or start, or it is start index or page number in any
// case style (not page_size, per_page, page_token).
func pageKey(k []byte) bool {
	var w keyWords
	if !w.split(k) || w.n == 0 || w.n > 3 {
		return false
	}
	switch last := string(w.word(w.n - 1)); last {
	case "offset", "page", "skip", "start":
		if w.n >= 2 && timeWord(w.word(w.n-2)) {
			return false // day_offset, utc_offset, time_start: a place in time (fk21)
		}
		return last != "page" || w.n < 2 || string(w.word(w.n-2)) != "per"
	case "index", "number", "no":
		if w.n >= 2 {
			switch string(w.word(w.n - 2)) {
			case "start", "page":
				return true
			}
		}
	}
	return false
}

// pagingOf returns the shape of arguments args (every leaf but the page
// position) and the position, or false when args have no page position,
// more than one, or are too many to read.
func (d *Detector) pagingOf(args []byte) (shape uint64, pos float64, ok bool) {
	if !holdsPageKey(args) {
		return 0, 0, false
	}
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0, 0, false
	}
	found, start, sized := false, false, false
	for i := range as.out {
		l := &as.out[i]
		sized = sized || l.kind == leafNumber && pageSizeKey(l.key)
		if l.kind == leafNumber && !l.arr && pageKey(l.key) {
			if found {
				return 0, 0, false
			}
			start = bytes.EqualFold(l.key, []byte("start"))
			p, err := strconv.ParseFloat(string(l.raw), 64)
			if err != nil {
				return 0, 0, false
			}
			shape += mix(l.path, 0x70616765)
			pos, found = p, true
			continue
		}
		shape += l.unit()
	}
	if start && !sized {
		// start alone is a place as often as a page: a time window's
		// (start, step), a recording's segment (start, duration). It is a
		// page's position beside a page's size (start and num, start and
		// rows), as a search engine asks (fk21).
		return 0, 0, false
	}
	return shape | 1, pos, found
}

// pageSizeKey reports whether key k names a page's size: its last word is
// count, limit, rows, num, size, results, take or top (page_size,
// max_results, per_page's page after per).
func pageSizeKey(k []byte) bool {
	var w keyWords
	if !w.split(k) || w.n == 0 || w.n > 3 {
		return false
	}
	switch string(w.word(w.n - 1)) {
	case "count", "limit", "rows", "num", "size", "results", "take", "top":
		return true
	case "page":
		return w.n >= 2 && string(w.word(w.n-2)) == "per"
	}
	return false
}

// donePaging counts read s's answer (sc) in the tool's paging streak.
func (d *Detector) donePaging(a *agentState, t *toolState, s *Step, o *Outcome, sc *scan) {
	p := &t.paging
	if o.Error || isWrite(s.Access) || sc.cut || len(s.Args) > maxChainArgs || s.epoch != d.epoch {
		p.count = 0
		return
	}
	shape, pos, ok := d.pagingOf(s.Args)
	if !ok {
		p.count = 0
		return
	}
	ans := pageAnswer(sc, pos)
	if p.count > 0 && p.shape == shape && p.ans == ans && pos > p.pos && p.agent == a.id && p.epoch == d.epoch {
		p.count++
		p.pos = pos
		if p.count > d.cfg.rephraseMax && p.last == "" {
			p.last = resultPreview(o)
		}
		return
	}
	*p = pagingStreak{shape: shape, pos: pos, ans: ans, count: 1, agent: a.id, epoch: d.epoch}
}

// namesPage reports whether line b names page position pos as a page's
// header does: the word page, offset or start, then pos ("Results for
// 'x' (page 3):", "Page 3 of results", "offset 16").
func namesPage(b []byte, pos float64) bool {
	if len(b) > 200 || pos < 0 || pos != float64(int64(pos)) {
		return false
	}
	n := strconv.AppendInt(nil, int64(pos), 10)
	for _, w := range [...]string{"page ", "offset ", "start "} {
		for i := 0; ; {
			j := indexFold(b[i:], w)
			if j < 0 {
				break
			}
			at := i + j + len(w)
			if bytes.HasPrefix(b[at:], n) && (at+len(n) == len(b) || b[at+len(n)] < '0' || b[at+len(n)] > '9') &&
				(i+j == 0 || !isLetter(rune(b[i+j-1]))) {
				return true
			}
			i = at
		}
	}
	return false
}

// indexFold is the index of ASCII word w (lower case) in b, any case, or -1.
func indexFold(b []byte, w string) int {
	for i := 0; i+len(w) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(w)], []byte(w)) {
			return i
		}
	}
	return -1
}

// pageAnswer is the substance of a page's answer (sc) to a call at
// position pos: its digest, or, when the answer echoes the position it
// was asked for under a page key ({"offset": 16, "items": [...]}) or in
// a line that names it (namesPage), its pieces but that echo, as a set.
// The echo is every number under a page key (the offset sent and the next
// one to ask for: {"offset": 16, "next_offset": 18}) and the line that
// names the position. A list that ignores the offset it is sent and hands
// back the same items, naming each time the offset it was sent, pages
// past its end as one that names none does.
func pageAnswer(sc *scan, pos float64) uint64 {
	echoed := false
	for i := range sc.out {
		if pageEcho(&sc.out[i], pos) {
			echoed = true
			break
		}
	}
	if !echoed {
		return sc.digest
	}
	sum := uint64(0x6563686f)
	for i := range sc.out {
		l := &sc.out[i]
		if l.kind == leafNumber && !l.arr && pageKey(l.key) || l.kind == leafString && namesPage(l.raw, pos) {
			continue
		}
		sum += mix(l.unit(), 0x706167)
	}
	return sum
}

// pageEcho reports whether leaf l of a page's answer echoes position pos:
// pos under a page key, or a line that names it (namesPage).
func pageEcho(l *leaf, pos float64) bool {
	if l.kind == leafNumber && !l.arr && pageKey(l.key) {
		p, err := strconv.ParseFloat(string(l.raw), 64)
		return err == nil && p == pos
	}
	return l.kind == leafString && namesPage(l.raw, pos)
}

// checkPaging refuses read s when the tool's last answers, more than
// RephraseMax+1 of them, were each the one before to pages moved forward,
// and s moves the page forward once more.
func (d *Detector) checkPaging(a *agentState, t *toolState, s *Step) *Verdict {
	p := &t.paging
	max := d.cfg.rephraseMax
	if max == 0 || p.count <= max+1 || isWrite(s.Access) || p.agent != a.id || p.epoch != d.epoch || len(s.Args) > maxChainArgs {
		return nil
	}
	shape, pos, ok := d.pagingOf(s.Args)
	if !ok || shape != p.shape || pos <= p.pos {
		return nil
	}
	return &Verdict{
		Detector: "repeat",
		Message: s.Tool + " answered the last " + plural(p.count, "call", "calls") + " alike (" + p.last +
			"), each asking for a later page, and nothing was written since: it has paged past the end of what there is; " +
			s.Tool + " " + preview(s.Args) + " asks for a later page again and cannot return anything new.",
		Suggestion: "The results ended: use what the pages you read brought, search for something else, or tell the user what you found.",
	}
}

// timeWord reports whether a key's word names time: day_offset,
// hour_offset, utc_offset, time_start ask for another day or hour, whose
// answer may truly be the one before.
func timeWord(w []byte) bool {
	switch string(w) {
	case "day", "days", "hour", "hours", "minute", "minutes", "second", "seconds", "week", "weeks",
		"month", "months", "year", "years", "date", "time", "utc", "tz", "timezone":
		return true
	}
	return false
}
