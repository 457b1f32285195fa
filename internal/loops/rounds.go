package loops

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// This file holds the delegation detectors beyond the exact repeat of a
// sub-task: a hand-off back to an agent that is waiting for this very work
// ("delegation_cycle"), and rounds of reworded hand-offs that end in the
// same rejection each time ("delegation").

// checkCycle refuses a hand-off to an agent that is already on the
// delegation stack: it sent or received one of the hand-offs this one
// descends from, and is waiting for their result.
func checkCycle(s *Step, to string) *Verdict {
	at := slices.Index(s.Chain, to)
	if at < 0 {
		return nil
	}
	path := strings.Join(s.Chain, " -> ") + " -> " + to
	return &Verdict{
		Detector: "delegation_cycle",
		Message: "handing " + quote(s.Task) + " to " + to + " closes a cycle (" + path + "): " + to +
			" is already on the delegation stack, waiting for the work that was handed on from it; the task would go round again.",
		Suggestion: "Do the sub-task yourself with what you have, report back to " + s.Chain[len(s.Chain)-1] +
			"'s caller what is missing (a budget, a card, a decision), or ask the user; do not hand it back up.",
	}
}

const maxRounds = 8 // round verdicts remembered per delegator and receiver

// verdict is a delegation's final answer as the delegator received it. What
// it says (whether it rejects, its points) is read only when it is compared.
type verdict struct {
	at   uint64 // when it was received (Detector.verdicts); 0 for none
	full string // the text, at most maxVerdict bytes
	from string // who gave it
	text string // quoted in a Message
	turn uint64 // the delegator's turn its hand-off was made in (agentState.turns)

	loose bool // handed on with a task that shares little with the chain's (rounds.next.loose)

	parsed bool
	norm   uint64     // the text, case, spaces and punctuation ignored
	items  int        // points it lists
	neg    bool       // it reads as a rejection
	words  [][]uint64 // content words of each point it lists (negations left out)
}

const maxVerdict = 2048 // bytes of a verdict read

func (v *verdict) parse() {
	if v.parsed {
		return
	}
	v.parsed = true
	v.norm, v.items, v.neg, v.words = taskKey("", trimPunct(v.full)), items(v.full), rejection(v.full), pointWords(v.full)
}

// rounds is what "delegation" remembers about one delegator's hand-offs to
// one receiver whose tasks are rewordings of each other: the verdict that
// ended each round (the last one the delegator received before handing the
// task over again).
type rounds struct {
	count  int
	words  []uint64 // content words of the chain's tasks
	nums   []uint64 // the numbers its tasks name
	at     uint64   // Detector.verdicts at the last hand-off
	others uint64   // successful writes by agents other than the receiver then
	turn   uint64   // the delegator's turn the last hand-off was made in
	task   string   // the last hand-off's task, at most maxVerdict bytes (fedBack)
	ends   []verdict

	// The hand-off being checked, applied by commit once it is allowed.
	next struct {
		linked bool
		loose  bool // linked by one shared word alone, and less than half its words
		words  []uint64
		nums   []uint64
		at     uint64
		others uint64
		turn   uint64
		end    verdict
		task   string
		fed    bool // it hands the receiver's last work back to it (fedBack)
	}
}

// maxRecv is the verdicts an agent remembers receiving: a fan-out's
// receivers, for the round of each to end with its own (roundEnd).
const maxRecv = 8

// received records the verdict that agent from got back from to (its
// text, verdictText), for the hand-off it made in its turn turn.
func (d *Detector) received(from, to string, text string, turn uint64) {
	a := d.agent(from)
	if to == "" {
		to = "main"
	}
	d.verdicts++
	a.recv[a.nrecv%maxRecv] = verdict{at: d.verdicts, full: text, from: to, text: quote(text), turn: turn}
	a.nrecv++
}

// roundEnd returns the verdict that ends a round of handing tasks to
// receiver to, whose last hand-off was made in the delegator's turn turn
// when Detector.verdicts was at: the last verdict the delegator received
// since then, but for those of that hand-off's siblings. Hand-offs made in
// one turn (a fan-out: three researchers, a translator per language, a
// mapper per chunk) were none of them chosen after reading another's
// verdict: each answers its own task, and the round of handing a task to
// one of them ends with that one's verdict, whichever sibling answered
// last (TestFanOutRoundsEachReceiver). A hand-off made in a later turn
// than the receiver's (a verifier's, in a pipeline) was chosen after
// reading it, and its verdict ends the round, as a rejection of the
// receiver's work (TestRewordedDelegation). With the delegator's turns
// unknown (no model call of its seen), every verdict is read as a later
// turn's. It returns nil when there is none.
func (a *agentState) roundEnd(to string, at, turn uint64) *verdict {
	for i := range min(a.nrecv, maxRecv) {
		v := &a.recv[(a.nrecv-1-i)%maxRecv]
		if v.at <= at {
			return nil
		}
		if turn == 0 || v.turn != turn || v.from == to {
			return v
		}
	}
	return nil
}

// verdictText is a delegation's result as the text of its verdict, at
// most maxVerdict bytes; false when it says nothing.
func verdictText(result []byte) (string, bool) {
	var text string
	if n := len(result); n >= 2 && result[0] == '"' && result[n-1] == '"' && bytes.IndexByte(result, '\\') < 0 {
		text = string(result[1 : n-1]) // a JSON string without escapes
	} else if json.Unmarshal(result, &text) != nil {
		text = string(result)
	}
	text = strings.TrimSpace(text)
	if len(text) > maxVerdict {
		text = text[:maxVerdict]
	}
	return text, text != ""
}

// checkRounds refuses a hand-off from from to to of a task that rewords the
// tasks of the last rounds, when those rounds ended in the same rejection
// (or a paraphrase of it: as many points or more, sharing their words),
// with no successful write by another agent than the receiver in between.
// It returns the state to commit if the hand-off is allowed.
func (d *Detector) checkRounds(from, to, task string, others, turn uint64) (*rounds, *Verdict) {
	k := mix(hashString(from), hashString(to))
	rs, ok := d.rounds.get(k)
	if !ok {
		rs = &rounds{}
		d.rounds.put(k, rs)
	}
	n := &rs.next
	n.words = words(task, n.words)
	n.nums = numbers(task, n.nums)
	n.at, n.others, n.turn = d.verdicts, others, turn
	n.end, n.fed = verdict{}, false
	n.task = task
	if len(n.task) > maxVerdict {
		n.task = n.task[:maxVerdict]
	}
	// A rewording names no number the chain's tasks did not and shares a
	// word with them; a task that names a new number ("attempt 3",
	// "section 4") is a new task.
	sh := shared(n.words, rs.words)
	n.linked = rs.count > 0 && shared(n.nums, rs.nums) == len(n.nums) && rs.others == others && sh > 0
	if !n.linked {
		return rs, nil
	}
	// A task that shares one word with the chain's, less than half of its
	// own, may be another task about the same thing ("PgBouncer's
	// auth_type" after "PgBouncer's version"): the same rejection of it is
	// the same defect, but the same question asked back is what each of
	// those tasks needs to start, not this task coming round again.
	n.loose = sh < 2 && 2*sh < len(n.words)
	if v := d.agent(from).roundEnd(to, rs.at, rs.turn); v != nil {
		n.end = *v
		n.end.loose = n.loose
		if fedBack(rs.task, task, v.full) {
			// The last round's work, taken up as this one's input: the
			// rounds before it are no repeat of those after.
			n.fed = true
			return rs, nil
		}
	}
	max := d.cfg.delegationMax
	if len(rs.ends)+1 < max || n.end.at == 0 {
		return rs, nil
	}
	var buf [maxRounds + 1]*verdict
	prev := buf[:0]
	for i := len(rs.ends) - (max - 1); i < len(rs.ends); i++ {
		prev = append(prev, &rs.ends[i])
	}
	prev = append(prev, &n.end)
	for i := 1; i < len(prev); i++ {
		if !sameRejection(prev[i-1], prev[i]) {
			return rs, nil
		}
	}
	// The same question asked back, each time to another task (a loose
	// link, above): each task needs the answer, none came round again.
	for _, v := range prev {
		if v.loose && asksBack(v.full) {
			return rs, nil
		}
	}
	// The same account word for word, neither a rejection nor a
	// question asked back, is said as what it is.
	end, address := "rejection", "address the points of the rejection in the task"
	if last := prev[len(prev)-1]; !last.neg && !asksBack(last.full) {
		end, address = "verdict", "give the task what the last account lacked"
	}
	return rs, &Verdict{
		Detector: "delegation",
		Message: "the last " + plural(max, "round", "rounds") + " of handing this task to " + to +
			" ended in the same " + end + " (" + prev[len(prev)-2].text + "; then " + prev[len(prev)-1].text +
			"), and " + quote(task) + " is one more rewording of the same task; nothing was written by anyone else in between, so a " +
			ordinal(rs.count+1) + " round would end the same way.",
		Suggestion: "Do not reword the task and hand it over again: " + address + " " +
			"(say what must be different this time), accept the last result, or report to the user why it cannot be completed.",
	}
}

// commit applies the hand-off that checkRounds allowed.
func (rs *rounds) commit() {
	if rs == nil {
		return
	}
	n := &rs.next
	if !n.linked {
		rs.count, rs.ends = 0, rs.ends[:0]
		rs.words = append(rs.words[:0], n.words...)
		rs.nums = append(rs.nums[:0], n.nums...)
	} else {
		if len(rs.ends) == maxRounds {
			rs.ends = append(rs.ends[:0], rs.ends[1:]...)
		}
		rs.ends = append(rs.ends, n.end)
		if n.fed {
			rs.ends = rs.ends[:0]
		}
		rs.words = mergeWords(rs.words, n.words)
	}
	rs.count++
	rs.at, rs.others, rs.turn = n.at, n.others, n.turn
	rs.task = n.task
}

// minFedBack is the shortest verdict, in bytes, read as work handed back.
const minFedBack = 24

// fedBack reports whether a hand-off of task hands back to its receiver
// the work that ended the last round (its verdict, end, quoted whole in
// the task: a draft shortened, then handed back to be shortened again),
// when the last round's task, last, did not already hold it: that round
// made it. The round is the next one's input, not a repeat of it, however
// alike their ends read; a round handed its own work back and ending
// with it unchanged made nothing, and counts as before.
func fedBack(last, task, end string) bool {
	end = strings.TrimSpace(end)
	if len(end) < minFedBack {
		return false
	}
	return strings.Contains(task, end) && !strings.Contains(last, end)
}

// mergeWords returns the union of two sorted word lists, at most
// 2*maxWords of them.
func mergeWords(a, b []uint64) []uint64 {
	a = append(a, b...)
	slices.Sort(a)
	a = slices.Compact(a)
	if len(a) > 2*maxWords {
		a = a[:2*maxWords]
	}
	return a
}

// sameRejection reports whether verdict b repeats rejection a: both read as
// rejections, and b says the same thing (or a asks the delegator a question,
// and b asks it again word for word: a sub-agent that cannot start without
// an answer the reworded task did not give), or lists as many points as a (two
// or more) of which as many as a has each share a word with one of a's
// points: the same defects are still open. A verdict that lists fewer
// points, or other ones, is progress.
func sameRejection(a, b *verdict) bool {
	if a.at == 0 || b.at == 0 {
		return false
	}
	a.parse()
	b.parse()
	if a.norm == b.norm && (a.neg || asksBack(a.full) || a.says()) {
		// The same rejection again, or the same question asked back
		// word for word: the reworded task did not answer it. So is
		// the same account word for word (the same three sources, the
		// same deferral to another agent): the reworded task brought
		// the receiver nothing to work on that the last one had not.
		return true
	}
	if !a.neg || !b.neg {
		return false
	}
	if a.items < 2 || b.items < a.items {
		return false
	}
	// A rejection that names a number the last one did not (another
	// commit, version or revision reviewed: "head e2c95f8" after "head
	// b71d0a4") is of other work; its points, however alike their words,
	// are the new work's.
	if newNumber(a.full, b.full) {
		return false
	}
	open := 0
	for _, p := range b.words {
		for _, q := range a.words {
			if shared(p, q) > 0 {
				open++
				break
			}
		}
	}
	return open >= a.items
}

// minSays is the content words a verdict says, at the least, for the
// same verdict word for word to end a round as a rejection does: "Done."
// or "Approved." again says that the work is done, not that it was not.
const minSays = 6

// says reports whether the verdict says something of substance: minSays
// content words or more, a link's words left out ("See https://... for
// it." points somewhere, and says nothing of its own).
func (v *verdict) says() bool {
	var buf [minSays]uint64
	n := 0
	for _, f := range strings.Fields(v.full) {
		if strings.Contains(f, "://") {
			continue
		}
		if n += len(words(f, buf[:0])); n >= minSays {
			return true
		}
	}
	return false
}

const maxPoints = 8 // points of a verdict compared

// pointWords returns the content words of each point a verdict lists,
// leaving out the words that only say no.
func pointWords(s string) [][]uint64 {
	_, body := heading(s)
	var out [][]uint64
	start := 0
	cut := func(end int) {
		if len(out) < maxPoints {
			ws := words(body[start:end], nil)
			ws = slices.DeleteFunc(ws, func(h uint64) bool { return negationWords[h] })
			if len(ws) > 0 {
				out = append(out, ws)
			}
		}
	}
	for i, r := range body {
		switch r {
		case ';', '；', '\n', '•':
			cut(i)
			start = i + len(string(r))
		}
	}
	cut(len(body))
	return out
}

// negationWords are the hashes of the negations as words() makes them.
var negationWords = func() map[uint64]bool {
	m := map[uint64]bool{}
	for w := range negations {
		m[hashString(stem(w))] = true
	}
	return m
}()

// asksBack reports whether verdict s asks its delegator something: one of
// its sentences ends in a question mark (not a URL's query).
func asksBack(s string) bool {
	for i, r := range s {
		if r == '?' || r == '？' {
			rest := s[i+len(string(r)):]
			if rest == "" || rest[0] == ' ' || rest[0] == '\n' || r == '？' {
				return true
			}
		}
	}
	return false
}

// newNumber reports whether text b names a number (a run of digits, as
// numbers reads them) that text a does not.
func newNumber(a, b string) bool {
	var ba, bb [8]uint64
	na, nb := workNumbers(a, ba[:0]), workNumbers(b, bb[:0])
	return shared(nb, na) < len(nb)
}
