package loops

import (
	"hash/maphash"
	"strings"
	"unicode"
	"unicode/utf8"
)

// taskState is what "delegation" remembers about one sub-task handed to one
// agent.
type taskState struct {
	count    int       // hand-offs since the count last started over
	others   uint64    // successful writes by other agents at the last hand-off
	verdicts [2]string // the last two verdicts, newest last, quoted in a Message
	said     []uint64  // words of the last verdict (cutWords), to tell what the next one brings
	before   []uint64  // and of the one before it
	saidNums []uint64  // numbers the last verdict names (numbers)
	prevNums []uint64  // and the one before it
}

// taskKey hashes the receiving agent and the sub-task text, ignoring case,
// white space and punctuation at either end.
func taskKey(to, task string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(to)
	h.WriteByte(0)
	space := false
	wrote := false
	for i := 0; i < len(task); {
		r, n := utf8.DecodeRuneInString(task[i:])
		i += n
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && wrote {
			h.WriteByte(' ')
		}
		space = false
		wrote = true
		var buf [utf8.UTFMax]byte
		h.Write(utf8.AppendRune(buf[:0], unicode.ToLower(r)))
	}
	return h.Sum64()
}

func (d *Detector) checkDelegation(s *Step) *Verdict {
	c := &d.cfg
	if c.delegationMax == 0 {
		d.seq++
		s.seq = d.seq
		return nil
	}
	to := s.To
	if to == "" {
		to = "main"
	}
	from := s.Agent
	if from == "" {
		from = "main"
	}
	if v := checkCycle(s, to); v != nil {
		return v
	}
	task := taskKey("", trimPunct(s.Task))
	if specific(s.Task) {
		if v := d.checkTaskCycle(s, to, task); v != nil {
			return v
		}
	}
	s.key = taskKey(to, trimPunct(s.Task))
	others := d.epoch - d.agent(to).writes
	s.turn = d.agent(from).turns
	rs, rv := d.checkRounds(from, to, s.Task, others, uint64(s.turn))
	if rv != nil {
		return rv
	}
	ts, ok := d.tasks.get(s.key)
	if !ok {
		ts = &taskState{}
		d.tasks.put(s.key, ts)
	}
	if ts.others != others {
		ts.count = 0
	}
	if ts.count >= c.delegationMax {
		msg := "the sub-task " + quote(s.Task) + " was already handed to " + to + " " +
			plural(ts.count, "time", "times")
		if v := ts.verdicts; v[1] != "" {
			if v[0] == v[1] || v[0] == "" {
				msg += " (last verdict: " + v[1] + ")"
			} else {
				msg += " (verdicts: " + v[0] + "; " + v[1] + ")"
			}
		}
		return &Verdict{
			Detector: "delegation",
			Message:  msg + ", and nothing was written in between; a " + ordinal(ts.count+1) + " hand-off would go round the same loop.",
			Suggestion: "Do not hand the same sub-task over again: change the task (say what must be different this time), " +
				"accept the last result, or report to the user why it cannot be completed.",
		}
	}
	ts.count++
	ts.others = others
	d.agent(to).handed = task
	d.seq++
	s.seq = d.seq
	rs.commit()
	return nil
}

// specificWords is how many words a task needs before checkTaskCycle
// judges it: a short task ("Review the changes", "Summarize the
// findings", or none, as an SDK's transfer_to_x hand-off carries) names a
// kind of work, which agents at several depths of one chain are handed in
// earnest; a sentence that names its own piece of work does not come back
// down by chance.
const specificWords = 6

// specific tells whether task has at least specificWords words.
func specific(task string) bool {
	n, in := 0, false
	for _, r := range task {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			if n++; n >= specificWords {
				return true
			}
		}
	}
	return false
}

// checkTaskCycle refuses hand-off s when its task (task: taskKey with no
// receiver) is the one an agent on its chain was handed, and an agent
// below that one on the chain was handed another task: the task came
// back down under other names (a venue scout asking an "event planner" to
// plan the offsite, which asks a "venue finder" for the venue), no agent
// twice on the stack. A task passed down as it is (a lead handing its own
// task to an engineer) has no other task between, and a short task is not
// judged (specific) (TestDelegationTaskCycle).
func (d *Detector) checkTaskCycle(s *Step, to string, task uint64) *Verdict {
	if len(s.Chain) < 2 {
		return nil
	}
	other := ""
	for i := len(s.Chain) - 1; i >= 1; i-- {
		a, ok := d.agents.get(s.Chain[i])
		if !ok || a.handed == 0 {
			return nil // a chain not all seen is not judged
		}
		if a.handed != task {
			if other == "" {
				other = s.Chain[i]
			}
			continue
		}
		if other == "" {
			return nil
		}
		path := strings.Join(s.Chain, " -> ") + " -> " + to
		return &Verdict{
			Detector: "delegation_cycle",
			Message: "handing " + quote(s.Task) + " to " + to + " hands down again the task " + s.Chain[i] +
				" was handed, and is still working on (" + path + "); " + other +
				"'s task came between, so the work would go round again under other names.",
			Suggestion: "Do the sub-task with what you have, or report to " + s.Chain[len(s.Chain)-1] +
				"'s caller what is missing; do not hand an ancestor's task back down.",
		}
	}
	return nil
}

func (d *Detector) doneDelegation(s *Step, o *Outcome) {
	ts, ok := d.tasks.get(s.key)
	if !ok {
		return
	}
	if o.Refused {
		if ts.count > 0 {
			ts.count--
		}
		return
	}
	ts.verdicts[0] = ts.verdicts[1]
	ts.verdicts[1] = preview(o.Result)
	// A verdict unlike the last one is something new the hand-off brought
	// back (another document summarised, another answer): the hand-offs
	// before it are no repeat of this one. The same verdict again, or
	// reworded (two thirds of the shorter one's words or more in common:
	// a rejection that says the same in other words), or none, and they
	// are; so is the verdict before the last one again (a reviewer that
	// goes back and forth between two objections).
	if v, ok := verdictText(o.Result); ok {
		d.wordsOf = cutWords(v, d.wordsOf[:0], linkPrefix)
		ws := d.wordsOf
		// A verdict that names a number neither of the last two named
		// ("Pushed e2c95f8" after "Pushed b71d0a4": another commit, another
		// version, another count) reports other work, however alike its
		// words.
		d.numsOf = workNumbers(v, d.numsOf[:0])
		ns := d.numsOf
		unlike := func(said, nums []uint64) bool {
			return said == nil || 3*shared(said, ws) < 2*min(len(said), len(ws)) || shared(ns, nums) < len(ns)
		}
		if ts.said != nil && ts.count > 1 && unlike(ts.said, ts.saidNums) && unlike(ts.before, ts.prevNums) {
			ts.count = 1
		}
		ts.said, ts.before = ts.before, ts.said
		ts.said = append(ts.said[:0], ws...)
		ts.saidNums, ts.prevNums = ts.prevNums, ts.saidNums
		ts.saidNums = append(ts.saidNums[:0], ns...)
		d.received(s.Agent, s.To, v, uint64(s.turn))
	}
}

func trimPunct(s string) string {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if !unicode.IsSpace(r) && !unicode.IsPunct(r) {
			break
		}
		s = s[n:]
	}
	for len(s) > 0 {
		r, n := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(r) && !unicode.IsPunct(r) {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}

func quote(s string) string {
	if len(s) > previewLen {
		n := previewLen
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return `"` + s + `"`
}
