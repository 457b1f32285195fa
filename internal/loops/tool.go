package loops

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// callState is what "repeat" and "retry_budget" remember about one call
// (a tool and its normalized arguments).
type callState struct {
	res   uint64 // hash of the result the current streak returned
	count int    // identical non-transient results in a row
	first uint64 // dispatch number of the streak's first call
	epoch uint64 // write epoch when the streak's first call was dispatched
	last  string // the repeated result, quoted in a Message (set on the second)
	// agents that made the streak's calls (hashes); a call is refused only
	// when its agent took part, so that a sub-agent's first look at something
	// is never refused because others looked at it.
	agents [4]uint64

	transient int    // attempts in a row that ended in a transient error
	errType   string // the last transient error

	// The call's first answer, as a whole, until the call is made again:
	// only then is it remembered among what the agent was shown (moved),
	// so that calls made once each (a batch over new ids) add nothing there.
	ans uint64

	// The answer came back unchanged across writes that all went to one
	// target (a button clicked, a record saved) across times in a row:
	// those writes change nothing the call reads. seen is the write epoch
	// at the dispatch of the call's last answered asking, target the
	// run's (writeTarget), both cut to 32 bits to fit the struct's padding
	// (a callState is made for every new call).
	seen   uint32
	target uint32
	nagent uint8
	across uint8
	hasAns bool

	// The question a read of the call asks (question), kept from its
	// first Check: it depends on the tool and the arguments alone, and a
	// call made again (a poll, a re-read) need not fold them again. The
	// flags first, in the padding after the fields above.
	qKnown  bool
	qProse  bool
	qSearch bool
	q       uint64
	qAsking uint64
}

// toolState is what "retry_budget" and "amplification" remember about a tool.
type toolState struct {
	transient int    // calls in a row, any arguments, that ended in a transient error
	errType   string // the last transient error

	// The widening chain: the last dispatched call's arguments, and the pieces of
	// the chain's last result.
	args    []byte
	hasBase bool
	units   []uint64
	cut     bool   // the last result had more pieces than units holds
	stale   int    // widenings in a row that brought no new answer
	epoch   uint64 // write epoch of the chain
	first   []byte // arguments of the chain's first stale widening, quoted in a Message
	last    string // the last result, quoted in a Message

	errs errorStreak // "same_error"

	// "no_progress": the arguments of the last read of the tool that
	// brought its agent something new, and its answer.
	ask      []byte
	prevArgs []byte // the arguments of the call dispatched before args's (nil: unknown)
	// ask is in args, not yet copied (the read that brought news is the
	// tool's last dispatched call)
	askPending bool
	askAns     uint64
	askAgent   uint64
	askEpoch   uint64
	hasAsk     bool

	// The token counts beside the tool's last reply to free text, summed,
	// and the lengths of that call's arguments and result (grownCounts).
	exchSum  float64
	exchArgs int
	exchRes  int
	hasExch  bool

	echo   echoStreak   // answers alike but for what they echo of their calls
	alike  alikeState   // answers alike to calls in other spellings (alike.go)
	paging pagingStreak // answers alike to later pages (paging.go)
}

// sameAskingWider reports whether read s, which asks a question new to
// agent a, asks the tool's last question that brought something new with
// all its values as they were, only options added or changed beside them,
// and got that question's answer again, whole.
func (d *Detector) sameAskingWider(a *agentState, t *toolState, s *Step, answer uint64) bool {
	if t.askPending {
		return false // no call of the tool was dispatched since the read that brought news
	}
	if !t.hasAsk || t.askAgent != a.id || t.askEpoch != d.epoch || t.askAns != answer || s.prose || len(s.Args) > maxChainArgs {
		return false
	}
	// The call before it must be known (the tool's last dispatched call
	// is s): a step of a batch, the call before it with one value changed
	// under the same keys (another host, another customer), is work, even
	// when the batch's first item only added its key to the question.
	if t.prevArgs == nil || !bytes.Equal(t.args, s.Args) {
		return false
	}
	vals, keys := boundValues(s.Args, d.askVals[:0])
	n := len(vals)
	vals, _ = boundValues(t.ask, vals)
	defer func() { d.askVals = vals[:0] }()
	if len(vals)-n >= n {
		return false
	}
	for _, v := range vals[n:] {
		if !slices.Contains(vals[:n], v) {
			return false
		}
	}
	vals, pkeys := boundValues(t.prevArgs, vals[:n])
	if pkeys == keys && len(vals) == 2*n {
		other := 0
		for _, v := range vals[:n] {
			if !slices.Contains(vals[n:], v) {
				other++
			}
		}
		if other == 1 && !d.optionToggled(t.prevArgs, s.Args) {
			return false
		}
	}
	return true
}

// optionToggled reports whether the one value that changed from the
// arguments prev to args is an option, not another item of a batch: a
// switch (true to false), or a value under a key that names how the
// answer is given (currency, locale, format, sort, order, include_*,
// show_*): one hotel asked in USD, then EUR, then GBP asks one thing, where
// one host after another asks about each.
func (d *Detector) optionToggled(prev, args []byte) bool {
	ps := scanLeaves(prev, d.prev[:0], maxArgLeaves, false)
	d.prev = ps.out[:0]
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if ps.cut || as.cut || len(ps.out) != len(as.out) {
		return false
	}
	for i := range as.out {
		p, a := &ps.out[i], &as.out[i]
		if p.path != a.path || p.val == a.val {
			continue
		}
		// A value with a digit names a thing (an order "A-1234" under
		// "order"), whatever its key says.
		return a.kind == leafLiteral && p.kind == leafLiteral || a.kind == leafString && optionKey(a.key) && !isDigitIn(a.raw)
	}
	return false
}

// optionKey reports whether an argument's key names how an answer is
// given rather than what is asked: currency, locale, language, format,
// units, timezone, sort, order, direction, view, fields; or a switch of
// what it shows, include_archived, showHidden, with_details.
func optionKey(k []byte) bool {
	var w keyWords
	switch string(w.last(k)) {
	case "currency", "locale", "lang", "language", "format", "units", "unit", "timezone", "tz",
		"sort", "order", "direction", "view", "fields", "pretty", "verbose", "expand":
		return true
	case "by":
		first := string(w.word(0))
		return w.n == 2 && (first == "sort" || first == "order")
	}
	if w.n >= 2 {
		switch string(w.word(0)) {
		case "include", "exclude", "show", "hide", "with":
			return true
		}
	}
	return false
}

const maxChainArgs = 4096 // longer arguments are not compared for widening

func (d *Detector) tool(name string) *toolState {
	t, ok := d.tools.get(name)
	if !ok {
		t = &toolState{}
		d.tools.put(name, t)
	}
	return t
}

func (d *Detector) checkTool(s *Step) *Verdict {
	c := &d.cfg
	s.key = readKey(s.Tool, isWrite(s.Access), s.Args)
	s.fold, s.unref, s.refFold = 0, false, 0
	if isWrite(s.Access) && len(s.Args) <= maxChainArgs {
		s.fold, s.unref = d.writeFold(s)
	}
	a := d.agent(s.Agent)
	t := d.tool(s.Tool)
	cs, known := d.calls.get(s.key)

	// retry_budget
	if cs != nil && c.retryBudget > 0 && cs.transient >= c.retryBudget {
		return &Verdict{
			Detector: "retry_budget",
			Message: s.Tool + " " + preview(s.Args) + " failed " + plural(cs.transient, "time", "times") +
				" in a row with a transient error (" + cs.errType + "); the retry budget is " +
				plural(c.retryBudget, "attempt", "attempts") + ".",
			Suggestion: "Stop retrying this call: tell the user that " + s.Tool +
				" is unavailable right now, or get the information another way.",
		}
	}
	if c.toolRetryBudget > 0 && t.transient >= c.toolRetryBudget {
		return &Verdict{
			Detector: "retry_budget",
			Message: s.Tool + " failed " + plural(t.transient, "time", "times") +
				" in a row, with various arguments, with transient errors (last: " + t.errType + ").",
			Suggestion: "Stop calling " + s.Tool + " for now: tell the user it is unavailable, or use another tool.",
		}
	}

	// short_cycle
	if v := d.checkCycle(a, s); v != nil {
		return v
	}
	if v := d.checkFlip(s); v != nil {
		return v
	}

	// repeat
	if cs != nil && c.repeatMax > 0 && cs.count >= c.repeatMax && cs.took(a.id) && d.quiet(cs.first, cs.epoch) &&
		!d.waitAfterNews(a, s) {
		return &Verdict{
			Detector: "repeat",
			Message: s.Tool + " " + preview(s.Args) + " already ran " + plural(cs.count, "time", "times") +
				" and returned the same result each time (" + cs.last + "), and nothing was written since; a " +
				ordinal(cs.count+1) + " identical call" + exchangeAside(s) + " cannot return anything new.",
			Suggestion: "Use the result you already have. If you expect it to change, first do what changes it; " +
				"otherwise try a different tool or different arguments, or give your answer.",
		}
	}

	// repeat, across writes that change nothing the call reads: the same
	// answer after each of the last writes to one target (Next clicked,
	// the page the same) is the same answer after the next one.
	if cs != nil && c.repeatMax > 0 && !isWrite(s.Access) && int(cs.across) >= c.repeatMax && cs.took(a.id) &&
		uint32(d.epoch) != cs.seen && uint32(d.runTarget) == cs.target && uint32(d.runStart) <= cs.seen && d.quiet(cs.first, d.epoch) &&
		!d.timePassing(s.Args) {
		return &Verdict{
			Detector: "repeat",
			Message: s.Tool + " " + preview(s.Args) + " returned the same result (" + cs.last + ") after each of the last " +
				plural(int(cs.across), "write", "writes") + " to the same target, and only that target was written since; " +
				"those writes change nothing it reads, and another look cannot return anything new.",
			Suggestion: "The write is not doing what you expect: read the page or record for an error or a missing step, " +
				"change what you write, or tell the user what blocks you.",
		}
	}

	// repeat, respelled: only what the answer echoes moved
	if v := d.checkEcho(a, t, s); v != nil {
		return v
	}

	// same_error, across edits that change nothing the failure sees
	if v := d.checkEdit(a, s); v != nil {
		return v
	}

	// stale_write
	if v := d.checkStaleWrite(s); v != nil {
		return v
	}

	// same_error
	if v := d.checkSameError(a, t, s); v != nil {
		return v
	}

	// amplification
	widen := c.amplifyMax > 0 && t.args != nil && len(s.Args) <= maxChainArgs && d.widens(t.args, s.Args)
	if widen && t.hasBase && t.stale >= c.amplifyMax && t.epoch == d.epoch {
		return &Verdict{
			Detector: "amplification",
			Message: s.Tool + " was widened " + plural(t.stale, "time", "times") + " in a row (from " +
				preview(t.first) + ") and each wider call returned the same answer (" + t.last +
				"); widening it again to " + preview(s.Args) + " only grows the context.",
			Suggestion: "Stop widening the query: use the answer you have, or narrow the query to what you still need.",
		}
	}

	// rephrase
	if c.rephraseMax > 0 {
		if cs != nil && cs.qKnown && !isWrite(s.Access) {
			s.question, s.asking, s.prose, s.search = cs.q, cs.qAsking, cs.qProse, cs.qSearch
		} else {
			s.question = d.question(s)
			if cs != nil {
				cs.keepQuestion(s)
			}
		}
	}
	if v := d.checkRephrase(a, s); v != nil {
		return v
	}
	if v := d.checkAlike(a, t, s); v != nil {
		return v
	}
	if v := d.checkPaging(a, t, s); v != nil {
		return v
	}
	if v := d.checkRewrite(a, s); v != nil {
		return v
	}

	// no_progress
	if n, of, ok := a.noProgress(c.staleSteps, d.epoch); ok && !isWrite(s.Access) {
		what := "the last " + plural(n, "result", "results")
		if of != n {
			what = itoa(int64(n)) + " of the last " + plural(of, "result", "results")
		}
		return &Verdict{
			Detector: "no_progress",
			Message: what + " that " + a.who() + " received (" + a.staleList() +
				") brought nothing it had not seen already, and nothing was written since; calling " +
				s.Tool + " again looks like a loop.",
			Suggestion: "Work with what you already know: give your answer, ask the user, or change approach " +
				"instead of looking the same thing up again.",
		}
	}

	// Allowed: record the dispatch.
	if !known {
		cs = &callState{}
		d.calls.put(s.key, cs)
		if c.rephraseMax > 0 {
			cs.keepQuestion(s)
		}
	}
	s.call, s.agent, s.tool = cs, a, t
	d.seq++
	s.seq = d.seq
	s.epoch = d.epoch
	s.widen = widen
	if c.amplifyMax > 0 {
		if !widen {
			t.hasBase, t.stale = false, 0
		}
		if t.askPending {
			t.ask, t.askPending = append(t.ask[:0], t.args...), false
		}
		// The call before keeps its buffer: a swap, no copy.
		t.prevArgs, t.args = t.args, t.prevArgs
		if len(s.Args) <= maxChainArgs {
			t.args = append(t.args[:0], s.Args...)
		} else {
			t.args = nil
		}
	}
	if isWrite(s.Access) {
		d.addInflight(s.seq)
	}
	a.push(entry{seq: s.seq, key: s.key, fold: s.fold, refFold: s.refFold, epoch: s.epoch, tool: s.Tool, write: isWrite(s.Access)})
	return nil
}

func (d *Detector) doneTool(s *Step, o *Outcome) {
	c := &d.cfg
	write := isWrite(s.Access)
	if write {
		d.removeInflight(s.seq)
	}
	a := s.agent
	e := a.find(s.seq)
	if o.Refused {
		if e != nil {
			e.gone = true
		}
		return
	}
	if !o.Error && exceptionAnswer(o.Result) {
		// An exception printed as the answer is a failure the tool did
		// not type: a write that raised changed nothing it says, and a
		// cell that raises the same thing for each expression probes.
		o.Error, o.ErrorType = true, untypedStreak
	}
	exitFailed := false
	if !o.Error && exitFailedAnswer(o.Result) {
		// So is a command that exited non-zero, its output handed back as
		// the answer: the same rejection of a push however it is spelled,
		// the same test failing after edits that undo each other.
		o.Error, o.ErrorType, exitFailed = true, untypedStreak, true
	}
	httpFailed := false
	if !o.Error {
		// So is an HTTP response of 400 or more handed back as the
		// answer (httpstatus.go).
		if class := httpFailedAnswer(o.Result); class != "" {
			o.Error, o.ErrorType, httpFailed = true, class, true
		}
	}
	if !o.Error {
		// So is an API's failure handed on as its answer ({"ok": false,
		// "error": "not_in_channel"}): a post refused the same way
		// whatever its text probes, and wrote nothing. One that says it
		// was rate-limited or timed out is worth a retry.
		// So is a JSON-RPC error response, and a write's answer that
		// says what it started failed at once (exception.go).
		// Their complaint is the error they hold, not the answer's id
		// or clock around it.
		failed, transient := apiErrorAnswer(o.Result)
		if !failed {
			var complaint []byte
			if complaint, transient = rpcErrorAnswer(o.Result); complaint == nil {
				// So is an MCP tool's result with isError set, handed
				// on as a success by a framework in between.
				complaint, transient = mcpErrorAnswer(o.Result)
			}
			if complaint == nil {
				// So is an answer that says it was not accepted and
				// lists why ({"accepted": false, "errors": [...]}).
				complaint, transient = rejectedAnswer(o.Result)
			}
			if complaint == nil && write {
				complaint, transient = startFailedAnswer(o.Result, s.Args)
			}
			if complaint != nil {
				failed, o.Result = true, complaint
			}
		}
		if transient {
			o.Error, o.ErrorType = true, "unavailable"
		} else if failed {
			o.Error, o.ErrorType = true, untypedStreak
		}
	}
	if o.Error && (o.ErrorType == untypedStreak || o.ErrorType == "upstream_error" || o.ErrorType == "") && smtpTransient(o.Result) {
		// A mail server's "try again later" (451 4.7.1 greylisted) is
		// a transient failure, whatever the tool called it (smtp.go).
		o.ErrorType = "unavailable"
	}
	if !write || o.Error {
		d.flips.n = 0 // a read or a failure in between: no flip (flip.go)
	}
	var ent uint64 // the write's entity (writeEntity), once it succeeded
	if write && !o.Error {
		// A tool that declares its key (a file's path) names the entity it
		// writes by it; what it writes there still tells its writes apart:
		// an edit of other contents is another try, not the same write
		// again, and starts a run of its own.
		var tgt uint64
		tgt, ent = d.writeTarget(s)
		if len(s.Key) > 0 && tgt != 0 {
			tgt = mix(tgt, hashBytes(s.Args)) | 1
		}
		ans := mix(hashString(s.Tool), hashBytes(o.Result))
		if ent == 0 && tgt != 0 && tgt != d.runTarget && d.runTarget != 0 && ans == d.runAnswer && answerNamesID(o.Result, s.Args) {
			// The same answer naming what it acted on (one light, by its
			// id) to a write that names no id and whose words are respelled
			// otherwise ("the kitchen light", "Kitchen lights"): the server
			// resolved it to the same thing, and it is the run's target
			// (answerid.go). Writes that name their items by id (a cart's
			// products) are other targets, whatever their answers.
			tgt = d.runTarget
		}
		d.runAnswer = ans
		d.flips.push(hashString(s.Tool), d.flipTarget(s), ans, a.id, a.name)
		a.writeAns = ans
		if tgt == 0 || tgt != d.runTarget {
			d.runTarget, d.runStart = tgt, d.epoch
		}
		d.epoch++
		a.writes++
		d.doneRewrite(a, s, o.Result)
	}
	t, cs := s.tool, s.call

	// A tool declared retryable may fail in ways it does not name; every
	// failure of it that is not known to be permanent is worth a retry.
	transient := o.Error && (Transient(o.ErrorType) || s.Retryable && !permanent(o.ErrorType))
	if transient {
		errType := o.ErrorType
		if !Transient(errType) {
			errType = "unavailable (" + errType + ")"
		}
		cs.transient++
		cs.errType = errType
		t.transient++
		t.errType = errType
		t.hasBase, t.stale = false, 0
		if e != nil {
			e.done, e.transient = true, true
		}
		return
	}
	cs.transient = 0
	t.transient = 0

	d.doneEdit(a, s, o, write, ent)
	if write {
		d.doneStaleWrite(s, o)
	} else if !o.Error {
		a.reads++
		d.readSeen(s)
	}
	d.doneSameError(a, t, s, o, httpFailed, exitFailed)

	sc := scanResult(o.Result, d.units[:0], unitsPerStep, &d.volatile, &d.inner, s.prose)
	d.units = sc.out[:0]

	// repeat: the same substance, whatever the metadata around it.
	r := sc.digest
	if o.Error {
		r = mix(hashString(o.ErrorType), r)
	}
	made := cs.count > 0 // the call was answered before
	switch {
	case !made || cs.res != r || o.Error:
		cs.across = 0
	case uint32(s.epoch) != cs.seen && d.runTarget != 0 && uint32(d.runStart) <= cs.seen && (cs.across == 0 || cs.target == uint32(d.runTarget)):
		cs.across, cs.target = min(cs.across+1, 100), uint32(d.runTarget)
	case uint32(s.epoch) != cs.seen:
		cs.across = 0
	}
	cs.seen = uint32(s.epoch)
	if cs.count > 0 && cs.res == r && cs.epoch == s.epoch {
		cs.count++
		if cs.count == 2 {
			cs.last = resultPreview(o)
		}
	} else {
		cs.res, cs.count, cs.first, cs.epoch, cs.last, cs.nagent = r, 1, s.seq, s.epoch, "", 0
	}
	if cs.across > 0 && cs.last == "" {
		cs.last = resultPreview(o)
	}
	cs.join(a.id)
	if e != nil {
		e.done, e.res = true, r
		if !o.Error && c.writeCycleRepeats > 0 && a.writeInRing() {
			e.tmpl, e.counts = countedAnswer(o.Result)
		}
	}

	d.doneAlike(a, t, s, o, &sc)
	d.donePaging(a, t, s, o, &sc)
	if o.Error {
		t.hasBase, t.stale = false, 0
		t.echo.count = 0
		return
	}
	var ec echoes
	computed := s.widen || mayHoldProse(s.Args)
	if computed {
		ec = d.echoes(s.Args) // only widenings and free text can be echoed
		ec.maskEchoes(sc.out, &d.echoed)
	}
	d.doneEcho(a, t, s, o, &sc, &ec, computed)

	// amplification
	if c.amplifyMax > 0 {
		d.chain(t, s, o, &sc, &ec)
	}

	// no_progress and rephrase: did the result bring anything new?
	if (c.staleSteps > 0 || s.question != 0) && !write {
		fresh, own := 0, 0                  // own: fresh pieces that only name a value of the call
		var answer uint64                   // the pieces as a set, in any order
		var exchAns uint64                  // the token counts beside a reply to free text, as a set
		exchFresh := 0                      // fresh pieces among them
		ae := d.argEchoesOf(s.Args, sc.out) // notation.go
		for i := range sc.out {
			if sc.out[i].kind == leafString && ec.isText(sc.out[i].val) {
				continue // the agent's own words
			}
			u := ae.unit(&sc.out[i])
			answer += mix(u, 0x616e73)
			if sc.out[i].exch {
				exchAns += mix(u, 0x616e73)
			}
			if d.seen.add(mix(a.id, u)) {
				fresh++
				if sc.out[i].exch {
					exchFresh++
				} else if ae.own(&sc.out[i]) {
					own++
				}
			}
		}
		if fresh > own {
			d.learn(a) // rewrite.go
		}
		judged := !(sc.cut || sc.text < c.staleMinBytes)
		// A question the agent had not asked before (other arguments than
		// its earlier calls', respelled; or a free text that rewords none of
		// them) learns its answer even when the answer is one the agent has
		// seen: a batch over new ids, a classifier over new texts, health
		// checks of new hosts all answering alike are work, not a loop.
		// The same values under the same keys bound otherwise (row 3 seat
		// 1 after row 1 seat 3) are another asking, new.
		novel := s.question != 0 && d.seen.add(mix(a.id, mix(s.asking, 0x61736b6564)))
		// Unless it is the tool's last question that brought something new,
		// asked with options added or changed beside all its values (a
		// currency, a rate plan, a payment policy), and its answer came back
		// whole: the options changed nothing it was asked.
		if novel && fresh == 0 && d.sameAskingWider(a, t, s, answer) {
			novel = false
		}
		if fresh > 0 && s.question != 0 && !s.prose && len(s.Args) <= maxChainArgs {
			// Its arguments are kept as they are, and read only when a
			// later answer is this one. While they are the tool's last
			// dispatched call's, they are copied only when the next call
			// is dispatched: a request of one call allocates nothing.
			if bytes.Equal(t.args, s.Args) {
				t.askPending = true
			} else {
				t.ask, t.askPending = append(t.ask[:0], s.Args...), false
			}
			t.askAns, t.askAgent, t.askEpoch, t.hasAsk = answer, a.id, d.epoch, true
		}
		// A call made before whose answer, as a whole, is one it never gave
		// the agent: what it reads moved, as a polled gauge's readings do,
		// each of them within a range already shown (cpu 41 then 43, lag 0
		// then 2). Its pieces are old, its state is not; an answer it gave
		// before (a status flapping back) is judged.
		moved := false
		if made {
			if cs.hasAns {
				d.seen.add(mix(a.id, mix(s.key, mix(cs.ans, 0x6d6f766564))))
				cs.hasAns = false
			}
			moved = d.seen.add(mix(a.id, mix(s.key, mix(answer, 0x6d6f766564))))
		} else {
			cs.ans, cs.hasAns = answer, true
		}
		// An answer too small to judge as progress ("No files found", an
		// empty list, one count) is still the same answer to the same
		// question when nothing in it is new: asked again respelled, it
		// is the question going round.
		// So is a search in words that found nothing, asked again in
		// other words; one whose arguments hold a number only with the
		// same numbers (a sweep over weeks or hours, each empty, names
		// another window in numbers each time).
		// A question reworded moves the token counts beside a model's
		// reply whatever it said: the rephrase rule compares the replies
		// without them (envelope.go). Every other rule reads them.
		qAnswer, qFresh := answer-exchAns, fresh-exchFresh
		if exchAns != 0 && t.grownCounts(s, len(o.Result), sc.out) {
			// Unless they grew by more than a rewording can move them:
			// a job's counts, its one sign that it moves.
			qAnswer, qFresh = answer, fresh
		}
		small := !judged && !sc.cut && qFresh == 0 && (!s.prose || s.search)
		swept := small && s.prose && bytes.ContainsAny(s.Args, "0123456789")
		// A question in words whose short answer says, in words, that it
		// was given already ("I already told you", "Again, ...", "stop
		// asking") is the same answer as the one before it, whatever it
		// repeats: the asking before it counts too.
		told := s.prose && !sc.cut && saysToldBefore(o.Result)
		if swept {
			// Its numbers are part of what it asks, then: the same
			// window (after:2026/11/01, after:2026/11/1) asked again in
			// other words is the same empty answer again; another week
			// is another answer, and the sweep goes on.
			var buf [8]uint64
			for _, n := range numbers(string(s.Args), buf[:0]) {
				qAnswer = mix(qAnswer, n)
			}
		}
		if told {
			qAnswer, small = toldAnswer, !judged
		}
		other := d.doneRephrase(a, s, qFresh > 0 && !told, judged, small, qAnswer, sc.out, &ec, told)
		if c.staleSteps > 0 {
			switch {
			case fresh > 0:
				a.judge(false, s.Tool, d.epoch)
			case !judged || novel || other || moved:
				// Too little (or too much) to judge, a new question, or a
				// new state of what a call reads: neutral.
			default:
				a.judge(true, s.Tool, d.epoch)
			}
		}
	}
}

// grownCounts reports whether the token counts beside the reply to call s
// (the leaves of out marked exch; res, the length of its result), summed,
// grew since the tool's last such reply by more than the exchange can move
// them: a prompt's count moves by at most a token a byte of the question's
// change (twice, with a total beside it), give or take maxCountsMoved; an
// agent that keeps its conversation (a chat under one context) reads the
// last question and its answer again, its prompt growing by them each
// turn, at most a token two bytes of them (twice, with a total); a reply
// said again keeps its own. Counts that grow by more are not the
// exchange's but a job's, reported while it works ("still working", its
// tokens growing by hundreds a poll): they are its news, even to the
// rephrase rule. The sum is kept for the next reply.
func (t *toolState) grownCounts(s *Step, res int, out []leaf) bool {
	sum := 0.0
	for i := range out {
		if out[i].exch {
			if v, err := strconv.ParseFloat(string(out[i].raw), 64); err == nil {
				sum += v
			}
		}
	}
	grown := false
	if t.hasExch {
		moved := len(s.Args) - t.exchArgs
		if moved < 0 {
			moved = -moved
		}
		grown = sum-t.exchSum > float64(2*moved+t.exchArgs+t.exchRes+maxCountsMoved)
	}
	t.exchSum, t.exchArgs, t.exchRes, t.hasExch = sum, len(s.Args), res, true
	return grown
}

// maxCountsMoved is how far, beyond the question's own change, a
// reworded question's token counts may grow and still be the exchange's.
const maxCountsMoved = 64

func resultPreview(o *Outcome) string {
	if o.Error {
		return o.ErrorType + ": " + preview(o.Result)
	}
	if len(o.Result) == 0 {
		return "empty"
	}
	return preview(o.Result)
}

// keepQuestion keeps the question read call s asks (question, just
// computed) with its call; a write's is not kept (it asks none).
func (cs *callState) keepQuestion(s *Step) {
	if isWrite(s.Access) {
		return
	}
	cs.q, cs.qAsking, cs.qProse, cs.qSearch, cs.qKnown = s.question, s.asking, s.prose, s.search, true
}

// took reports whether agent id made one of the streak's calls.
func (cs *callState) took(id uint64) bool {
	if int(cs.nagent) > len(cs.agents) {
		return true
	}
	for _, x := range cs.agents[:cs.nagent] {
		if x == id {
			return true
		}
	}
	return false
}

func (cs *callState) join(id uint64) {
	if int(cs.nagent) > len(cs.agents) || cs.took(id) {
		return
	}
	if int(cs.nagent) == len(cs.agents) {
		cs.nagent++ // too many to list: every agent counts as taking part
		return
	}
	cs.agents[cs.nagent] = id
	cs.nagent++
}

// writeTarget returns what write s writes to: its tool and the values of its
// key fields (Step.Key, or the arguments named like identifiers: ref, id,
// order_id), or, without them, its arguments respelled; 0 when they are
// too long to read. Clicks on one button described in other words are
// writes to one target; edits of one file with other contents are not.
//
// With key fields, what the write writes there is part of it too: its
// other values but those that describe rather than say (free text, and
// words without digits or the marks of a name, a number or an address:
// "Next button", "Continue"). Another row or field of one spreadsheet or
// form (range A3, not A2; field last_name, not first_name) is another
// write to it, not the same one made again.
//
// It returns the write's writeEntity too, from the same pass.
func (d *Detector) writeTarget(s *Step) (target, entity uint64) {
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return 0, 0
	}
	entity = entityOf(s, as.out)
	t, what, named := hashString(s.Tool), uint64(0), false
	// A write that says in words what it acts on ("Load more results
	// button") and names it by the ref a snapshot gave it acts on the
	// page: the page numbers its elements anew each time it is read, so
	// the same button clicked again comes with another ref, and the same
	// ref described otherwise ("Next", then "Continue") is the same
	// button. Its target is the page, and what it writes there.
	described := false
	for i := range as.out {
		l := &as.out[i]
		described = described || l.kind == leafString && len(l.raw) > 0 && !refKey(l.key) && describes(l.key, l.raw)
	}
	for i := range as.out {
		l := &as.out[i]
		if described && refKey(l.key) && len(l.raw) <= 8 {
			named = true
			continue
		}
		if l.kind == leafLiteral {
			continue
		}
		ok := false
		if len(s.Key) > 0 {
			for _, k := range s.Key {
				ok = ok || string(l.key) == k
			}
		} else {
			ok = identKey(l.key) && !proseArg(l.key, l.raw)
		}
		switch {
		case ok:
			t, named = mix(t, mix(hashBytes(l.key), respelled(l.raw, l.val))), true
		case l.kind == leafNumber || !describes(l.key, l.raw):
			what += mix(l.path, respelled(l.raw, l.val))
		}
	}
	if !named {
		return foldArgs(s.Tool, s.Args) | 1, entity
	}
	return mix(t, what) | 1, entity
}

// writeFold is write s's arguments respelled (foldArgs), and without the
// ref of the element it acts on when it describes that element in words
// too ("Load more button", ref e12): the page numbers its elements anew at
// each snapshot, so the same button clicked again comes with another ref,
// and three clicks answered alike are the one write made again
// (checkWriteRespelled). Only writes that name a ref are scanned. unref
// says the ref was left out.
func (d *Detector) writeFold(s *Step) (fold uint64, unref bool) {
	if !bytes.Contains(s.Args, []byte(`ref":`)) && !bytes.Contains(s.Args, []byte(`Ref":`)) {
		return foldArgs(s.Tool, s.Args) | 1, false
	}
	as := scanLeaves(s.Args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut {
		return foldArgs(s.Tool, s.Args) | 1, false
	}
	described := false
	var ref []byte
	for i := range as.out {
		l := &as.out[i]
		if l.kind != leafString {
			continue
		}
		if refKey(l.key) {
			if len(l.raw) > 8 || ref != nil {
				return foldArgs(s.Tool, s.Args) | 1, false
			}
			ref = l.raw
			continue
		}
		described = described || len(l.raw) > 0 && describes(l.key, l.raw)
	}
	if !described || len(ref) == 0 {
		return foldArgs(s.Tool, s.Args) | 1, false
	}
	s.refFold = uint32(refFold(s.Tool, as.out))
	// The ref's value, as written: `":"` before it and `"` after.
	var pat [12]byte
	p := append(append(append(pat[:0], '"', ':', '"'), ref...), '"')
	i := bytes.Index(s.Args, p)
	if i < 0 {
		return foldArgs(s.Tool, s.Args) | 1, false
	}
	b := append(append(d.echoed[:0], s.Args[:i+3]...), s.Args[i+3+len(ref):]...)
	f := foldArgs(s.Tool, b) | 1
	d.echoed = keepScratch(b)
	return f, true
}

// contentKey reports whether an argument's key names what a write writes
// in words (text, body, message, content, comment, reply, caption):
// a post or a comment that says something else is another write, even
// to one channel or ticket, where a button's label says only which
// button (element, label, description), and a note beside a write may
// only describe it.
func contentKey(k []byte) bool {
	var w keyWords
	switch string(w.last(k)) {
	case "text", "body", "message", "content", "comment", "reply", "caption", "markdown", "html":
		return true
	}
	return false
}

// timePassing reports whether a call's arguments are a span of time
// alone ({"time": 2}, {"seconds": 5}, {"duration": "500ms"}): a wait,
// which reads nothing, so that its answer ("Waited for 2") is the same
// whatever the writes before it did. It is time passing for what follows
// it, not another look at what they wrote ("repeat" across writes); a
// wait for a text or an element names what it looks for, and a call made
// again with nothing between is still "repeat"'s to judge.
func (d *Detector) timePassing(args []byte) bool {
	if len(args) > 256 {
		return false
	}
	as := scanLeaves(args, d.args[:0], maxArgLeaves, false)
	d.args = as.out[:0]
	if as.cut || len(as.out) == 0 || len(as.out) > 2 {
		return false
	}
	for i := range as.out {
		l := &as.out[i]
		switch {
		case !timeKey(l.key):
			return false
		case l.kind == leafNumber:
		case l.kind == leafString && len(l.raw) > 0 && durationLen(l.raw) == len(l.raw):
		default:
			return false
		}
	}
	return true
}

// waitAfterNews reports whether step s of agent a is a wait (timePassing)
// made again after a call that brought the agent something new: a poll
// that moved, with a backoff capped at its longest wait between. The wait
// is time passing for the next poll, answered alike because it reads
// nothing; a wait made again with nothing between, or after a result that
// brought nothing new, is not one (TestWaitBetweenPollsThatMove).
func (d *Detector) waitAfterNews(a *agentState, s *Step) bool {
	if a.judged == 0 || a.hist&1 != 0 || a.staleEpoch != d.epoch || a.among(s.key, 1) {
		return false
	}
	return d.timePassing(s.Args)
}

// timeKey reports whether an argument's key names a span of time: time,
// seconds, ms, duration, delay, sleep, wait_ms, timeoutSeconds.
func timeKey(k []byte) bool {
	var w keyWords
	switch string(w.last(k)) {
	case "time", "seconds", "secs", "sec", "ms", "millis", "milliseconds", "minutes", "mins",
		"duration", "delay", "sleep", "wait", "timeout", "interval":
		return true
	}
	return false
}

// refKey reports whether an argument's key names an element's ref in a
// page's snapshot: ref, element_ref, elementRef.
func refKey(k []byte) bool {
	var w keyWords
	return string(w.last(k)) == "ref"
}

// describes reports whether string value b describes what a write acts on
// (a button's label, a note) rather than being what it writes: free text,
// or letters and spaces alone, without a digit or the marks of a name or
// an address (first_name, ada@example.org, A2:D2).
func describes(key, b []byte) bool {
	if contentKey(key) {
		return false
	}
	if proseArg(key, b) {
		return true
	}
	for _, c := range b {
		if c < 0x80 && !isLetter(rune(c)) && c != ' ' && c != '\'' && c != '-' && c != '.' && c != ',' {
			return false
		}
	}
	return true
}

// toldAnswer stands for every answer that says it was given before.
const toldAnswer = 0x746f6c64746f6c64

// toldPhrases are what an answer says when the question was answered
// before; toldStart, what it begins with.
var (
	toldPhrases = [...]string{"already told", "already said", "already answered", "already gave", "already asked", "stop asking", "as i said", "as i mentioned", "asked this before", "same answer"}
	toldStart   = [...]string{"again,", "again:", "again -", "same as before"}
	// toldSaid are the speakers of "said it", "said that" and "told you"
	// when the answer says it was given before ("I've said it three
	// times", "as I told you"); said or told by anyone else ("Dana said
	// that the launch moves", "Lee told you the budget was approved"), it
	// reports what was said, and is an answer like any other.
	toldSaid = [...]string{"i", "i've", "i have", "i had", "i'd", "we", "we've", "we have"}
)

// saidBefore reports whether low, lower-cased, says "said it", "said
// that" or "told you" after one of toldSaid.
func saidBefore(low []byte) bool {
	return spokenBefore(low, "said ", "it", "that") || spokenBefore(low, "told ", "you", "you")
}

// spokenBefore reports whether low says verb followed by the word a or b,
// after one of toldSaid.
func spokenBefore(low []byte, verb, a, b string) bool {
	for i := 0; ; {
		j := bytes.Index(low[i:], []byte(verb))
		if j < 0 {
			return false
		}
		j += i
		i = j + len(verb)
		rest := low[i:]
		n := bytes.IndexFunc(rest, func(r rune) bool { return !('a' <= r && r <= 'z') })
		if n < 0 {
			n = len(rest)
		}
		if w := string(rest[:n]); w != a && w != b {
			continue // "said items", "said so", "told them"
		}
		before := bytes.TrimRight(low[:j], " ")
		for _, w := range toldSaid {
			if bytes.HasSuffix(before, []byte(w)) {
				if k := len(before) - len(w); k == 0 || !('a' <= before[k-1] && before[k-1] <= 'z') {
					return true
				}
			}
		}
	}
}

// saysToldBefore reports whether result, a short text (a JSON string of
// at most 256 bytes, or an object whose one member is such a string: a
// human-input tool's {"reply": ...}), says in words that it was given
// already.
func saysToldBefore(result []byte) bool {
	result = bytes.TrimSpace(result)
	if len(result) > 0 && result[0] == '{' {
		result = oneTextMember(result)
	}
	if len(result) < 2 || len(result) > 256 || result[0] != '"' {
		return false
	}
	if !hasToldWord(result[1 : len(result)-1]) {
		return false // most answers: one pass over their words
	}
	var buf [256]byte
	low := buf[:0]
	for _, c := range result[1 : len(result)-1] {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low = append(low, c)
	}
	for _, p := range toldStart {
		if bytes.HasPrefix(low, []byte(p)) {
			return true
		}
	}
	for _, p := range toldPhrases {
		if bytes.Contains(low, []byte(p)) {
			return true
		}
	}
	return saidBefore(low)
}

// oneTextMember returns the string (as written, quoted) of a short object
// with one member whose value is a string, or nil.
func oneTextMember(b []byte) []byte {
	if len(b) > 320 || !hasToldWord(b) {
		return nil // most answers: one pass over their words
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || len(m) != 1 {
		return nil
	}
	for _, v := range m {
		if v = bytes.TrimSpace(v); len(v) > 1 && v[0] == '"' {
			return v
		}
	}
	return nil
}

// hasToldWord reports whether text holds a word that every one of
// toldPhrases and toldStart holds one of.
func hasToldWord(text []byte) bool {
	var w [9]byte
	n := 0
	for i := 0; i <= len(text); i++ {
		c := byte(' ')
		if i < len(text) {
			c = text[i]
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'a' <= c && c <= 'z' {
			if n < len(w) {
				w[n] = c
			}
			n++
			continue
		}
		if n >= 4 && n <= len(w) {
			switch string(w[:n]) {
			case "told", "said", "asked", "asking", "again", "answered", "gave", "same", "mentioned":
				return true
			}
		}
		n = 0
	}
	return false
}
