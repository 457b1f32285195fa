package loops

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The assistants probe: the fifth held-out probe, written before reading
// the detectors, with its own writer (assistruns_gen_test.go) and its own
// driver (below), by kinds of agent and tools none of the four earlier
// probes (heldout, framework, long-run, operations) uses: a research agent
// driving a browser whose element refs renumber at every snapshot, a
// data-science agent running notebook cells and polling its kernel, a
// support agent on a ticket desk, a shopping and booking agent comparing
// offers and rooms, a memory and notes agent, a database agent running
// SQL, a game and simulation agent, a file-organising agent, and leads
// delegating to sub-agents.
//
// Half the runs are legit: long, repetitive, but each step learns
// something (pages that renumber their refs and change, cells whose loss
// falls while their clock runs, keyset pagination, countdowns, a board
// that moves, files stat'ed and moved one by one, rooms asked for other
// dates that answer alike). Half are loops that leave no exact repeat:
// questions reworded, reordered, with their arguments renamed; a cursor
// that goes back to its first page; polling whose only change is a clock
// or a relative time; a state that flips between two; retry storms with
// cosmetic changes; a button clicked under a new ref while the page stays.
// A loop is refused at or after its mark, the first call a careful reader
// could refuse under the benchmark's rules.

type asCall struct {
	tool string
	args string
	res  string
	err  string // error type; "" for a success
}

type asTurn struct {
	agent string
	say   string
	calls []asCall // the turn's calls, in parallel when more than one
	mark  bool
	// a hand-off to a sub-agent, whose turns are inner
	to, task, verdict string
	inner             []asTurn
}

type asRun struct {
	id, kind string
	loop     bool
	access   map[string]string
	keys     map[string][]string
	retry    map[string]bool
	turns    []asTurn
}

// asw writes the turns of one run, or of one sub-agent inside it.
type asw struct {
	run   *asRun
	agent string
	out   *[]asTurn
	mark  bool
}

func asRunOf(id, kind string, loop bool) *asw {
	r := &asRun{id: id, kind: kind, loop: loop, access: map[string]string{}, keys: map[string][]string{}, retry: map[string]bool{}}
	return &asw{run: r, out: &r.turns}
}

// acc declares the tools' access ("write", "high_risk").
func (w *asw) acc(access string, tools ...string) *asw {
	for _, t := range tools {
		w.run.access[t] = access
	}
	return w
}

func (w *asw) key(tool string, fields ...string) *asw { w.run.keys[tool] = fields; return w }

func (w *asw) retryable(tools ...string) *asw {
	for _, t := range tools {
		w.run.retry[t] = true
	}
	return w
}

// canon is v as the runtime hands it on: keys sorted, no insignificant
// white space; a string holding JSON is that JSON, any other string text.
func canon(v any) string {
	if s, ok := v.(string); ok {
		var x any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if dec.Decode(&x) == nil && !dec.More() {
			v = x
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimRight(b.String(), "\n")
}

func asOK(tool string, args, res any) asCall {
	return asCall{tool: tool, args: canon(args), res: canon(res)}
}

func asFail(tool string, args any, errType, msg string) asCall {
	return asCall{tool: tool, args: canon(args), res: canon(msg), err: errType}
}

// then marks the next turn: its first call is the first a reader could
// refuse.
func (w *asw) then() *asw { w.mark = true; return w }

func (w *asw) t(say string, calls ...asCall) *asw {
	*w.out = append(*w.out, asTurn{agent: w.agent, say: say, calls: calls, mark: w.mark})
	w.mark = false
	return w
}

func (w *asw) hand(say, to, task, verdict string, sub func(*asw)) *asw {
	h := asTurn{agent: w.agent, say: say, to: to, task: task, verdict: verdict, mark: w.mark}
	w.mark = false
	if sub != nil {
		sub(&asw{run: w.run, agent: to, out: &h.inner})
	}
	*w.out = append(*w.out, h)
	return w
}

type asPlay struct {
	refusedAt, markAt, calls int
	v                        *Verdict
}

// playAs drives a Detector the way the runtime does: the model's turn
// (its text reported when it ends), then the turn's calls, all checked
// before any is done (done in the order they were made), a hand-off's
// sub-agent under its own name with the delegation stack above it.
func playAs(r *asRun) asPlay {
	d := New(nil)
	p := asPlay{refusedAt: -1, markAt: -1}
	var walk func(turns []asTurn, stack []string) bool
	walk = func(turns []asTurn, stack []string) bool {
		for _, tn := range turns {
			who := tn.agent
			if who == "" {
				who = "main"
			}
			if tn.say != "" {
				m := &Step{Kind: ModelCall, Agent: tn.agent, Tokens: 600}
				d.Check(m)
				d.Done(m, Outcome{Result: Text(tn.say)})
			}
			if tn.mark && p.markAt < 0 {
				p.markAt = p.calls
			}
			if tn.to != "" {
				s := &Step{Kind: Delegation, Agent: tn.agent, To: tn.to, Task: tn.task}
				if len(stack) > 0 {
					s.Chain = append(append([]string(nil), stack...), who)
				}
				if v := d.Check(s); v != nil {
					p.refusedAt, p.v = p.calls, v
					return false
				}
				p.calls++
				if !walk(tn.inner, append(append([]string(nil), stack...), who)) {
					return false
				}
				d.Done(s, Outcome{Result: Text(tn.verdict)})
				continue
			}
			var out []*Step
			for _, c := range tn.calls {
				a := r.access[c.tool]
				if a == "" {
					a = "read"
				}
				s := &Step{Agent: tn.agent, Tool: c.tool, Args: []byte(c.args), Access: a, Key: r.keys[c.tool], Retryable: r.retry[c.tool]}
				if v := d.Check(s); v != nil {
					p.refusedAt, p.v = p.calls, v
					return false
				}
				p.calls++
				out = append(out, s)
			}
			for i, s := range out {
				c := tn.calls[i]
				o := Outcome{Result: []byte(c.res)}
				if c.err != "" {
					o.Error, o.ErrorType = true, c.err
				}
				d.Done(s, o)
			}
		}
		return true
	}
	walk(r.turns, nil)
	if p.markAt < 0 {
		// refused before its mark: where the mark would have been
		p.markAt = markOf(r.turns, new(int))
	}
	return p
}

// markOf is the index of the marked call among turns, counting from *n
// the calls before it (a hand-off counts as one), or -1.
func markOf(turns []asTurn, n *int) int {
	for _, tn := range turns {
		if tn.mark {
			return *n
		}
		if tn.to != "" {
			*n++
			if m := markOf(tn.inner, n); m >= 0 {
				return m
			}
			continue
		}
		*n += len(tn.calls)
	}
	return -1
}

func asOutcome(r *asRun, p asPlay) string {
	switch {
	case !r.loop && p.refusedAt >= 0:
		return "false_kill"
	case !r.loop:
		return "ok"
	case p.refusedAt < 0:
		return "missed"
	case p.refusedAt < p.markAt:
		return "early"
	}
	return "detected"
}

// asKnown lists the runs whose outcome is not their label's, each with why.
var asKnown = map[string]string{
	// On main when the probe was written (8c8aed0): 8 of 18 loops
	// detected (none early), 1 of 18 legit runs refused; after its fixes
	// 16 and none. The two it left are caught since the seventh probe: a
	// query respelled with a table alias (o.region) asks the same
	// question, its aliases left out of its words; a sample widened whose
	// answer is one line echoing its size ("Scanned 5000 sampled rows")
	// brings that line again, its grown number put back.
}

func TestAssistantRuns(t *testing.T) {
	checkAsRuns(t, "assistants probe", assistantRuns(), 30, asKnown)
}

// checkAsRuns plays each run of a probe written with the assistants
// probe's writer, at least min of them: each ends as its label says (a
// loop detected, not early; a legit run not refused) unless known says
// otherwise, and the figures are logged under name.
func checkAsRuns(t *testing.T, name string, runs []*asRun, min int, known map[string]string) {
	t.Helper()
	if len(runs) < min {
		t.Fatalf("%d runs", len(runs))
	}
	seen := map[string]bool{}
	var loops, legit, detected, kills int
	for _, r := range runs {
		if seen[r.id] {
			t.Fatalf("run %s twice", r.id)
		}
		seen[r.id] = true
		p := playAs(r)
		got := asOutcome(r, p)
		if r.loop {
			loops++
			if p.markAt < 0 {
				t.Errorf("%s: a loop without a mark", r.id)
			}
			if got == "detected" {
				detected++
			}
		} else {
			legit++
			if got == "false_kill" {
				kills++
			}
		}
		want := "ok"
		if r.loop {
			want = "detected"
		}
		if k, found := known[r.id]; found {
			want = k
		}
		var by string
		if p.v != nil {
			by = p.v.Detector + ": " + p.v.Message
		}
		t.Logf("%-44s %-5v %-10s at %3d mark %3d of %3d  %s", r.id, r.loop, got, p.refusedAt, p.markAt, p.calls, by)
		if got != want {
			t.Errorf("%s: %s, want %s (%s)", r.id, got, want, by)
		}
	}
	t.Logf("%s: %d/%d loops detected, %d/%d legit runs refused", name, detected, loops, kills, legit)
}
