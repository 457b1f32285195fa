package loops

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The long-run probe: trajectories of 40 to 200 calls by the kinds of agent
// the held-out probe (heldout_test.go) and the framework probe (runs_test.go)
// barely have — a coding agent, a browsing agent, a SQL agent, a research
// agent, a support agent writing to a ticketing API, a planner delegating to
// sub-agents — written by their own generator and played by their own
// driver, independently of both. Every step is a model turn (its text
// reported, as the model proxy sees it) and the call it chose, one at a
// time; a hand-off's sub-agent plays its steps under its own name with the
// delegation stack the runtime would give it.
//
// Each run is labelled by what a careful reader of the trajectory would say.
// Legit work must never be refused: tests that keep failing differently, a
// screenshot after each distinct action, a job polled whose status text
// stays while its progress moves, writes each answered "ok", lookups of
// distinct ids each answered "not found", a file re-read after each edit. A
// loop is refused at or after the first call a reader could justly refuse
// (the mark), the loops being the ones met in practice: two edits undone
// and redone with the same failing test, a query grown or reshuffled with
// the same rows, a cursor that comes back, a command retried with another
// timeout that fails the same way, the same apology reworded, two agents
// handing a task back and forth.

type lrStep struct {
	agent  string
	say    string
	tool   string
	args   string
	result string
	err    string // error type; "" for a success
	mark   bool   // the first call a reader could refuse
	// a hand-off
	to, task, verdict string
	inner             []lrStep
}

type lrRun struct {
	id, class string
	loop      bool
	access    map[string]string
	steps     []lrStep
}

type lrb struct {
	r     *lrRun
	agent string
	dst   *[]lrStep
	next  bool // mark the next call
}

func longRun(id, class string, loop bool) *lrb {
	b := &lrb{r: &lrRun{id: id, class: class, loop: loop, access: map[string]string{}}}
	b.dst = &b.r.steps
	return b
}

func (b *lrb) writes(tools ...string) *lrb {
	for _, t := range tools {
		b.r.access[t] = "write"
	}
	return b
}

func lrJSON(v any) string {
	if s, ok := v.(string); ok && json.Valid([]byte(s)) {
		return s
	}
	return string(marshal(v))
}

// do is one turn: the model says something and calls a tool.
func (b *lrb) do(say, tool string, args, result any) *lrb {
	*b.dst = append(*b.dst, lrStep{agent: b.agent, say: say, tool: tool, args: lrJSON(args), result: lrJSON(result), mark: b.next})
	b.next = false
	return b
}

// fail is a turn whose call failed.
func (b *lrb) fail(say, tool string, args any, errType string, msg string) *lrb {
	*b.dst = append(*b.dst, lrStep{agent: b.agent, say: say, tool: tool, args: lrJSON(args), result: lrJSON(msg), err: errType, mark: b.next})
	b.next = false
	return b
}

// say is a turn without a call.
func (b *lrb) say(text string) *lrb {
	*b.dst = append(*b.dst, lrStep{agent: b.agent, say: text})
	return b
}

// from marks the next call as the first a reader could refuse.
func (b *lrb) from() *lrb { b.next = true; return b }

// hand hands a task to another agent, whose turns fn writes.
func (b *lrb) hand(say, to, task, verdict string, fn func(*lrb)) *lrb {
	st := lrStep{agent: b.agent, say: say, to: to, task: task, verdict: verdict, mark: b.next}
	b.next = false
	if fn != nil {
		in := &lrb{r: b.r, agent: to, dst: &st.inner}
		fn(in)
	}
	*b.dst = append(*b.dst, st)
	return b
}

// lrPlayed is where a run was refused: the index of the refused call in play
// order (-1 if none), the index of the marked call, the verdict.
type lrPlayed struct {
	at, mark, calls int
	v               *Verdict
}

func playLong(r *lrRun) lrPlayed {
	d := New(nil)
	p := lrPlayed{at: -1, mark: -1}
	var play func(steps []lrStep, chain []string) bool
	play = func(steps []lrStep, chain []string) bool {
		for _, st := range steps {
			if st.say != "" {
				m := &Step{Kind: ModelCall, Agent: st.agent, Tokens: 600}
				d.Check(m)
				d.Done(m, Outcome{Result: Text(st.say)})
			}
			if st.mark && p.mark < 0 {
				p.mark = p.calls
			}
			switch {
			case st.to != "":
				s := &Step{Kind: Delegation, Agent: st.agent, To: st.to, Task: st.task}
				if len(chain) > 0 {
					s.Chain = append(append([]string(nil), chain...), agentName(st.agent))
				}
				if v := d.Check(s); v != nil {
					p.at, p.v = p.calls, v
					return false
				}
				p.calls++
				sub := append(append([]string(nil), chain...), agentName(st.agent))
				if !play(st.inner, sub) {
					return false
				}
				d.Done(s, Outcome{Result: Text(st.verdict)})
			case st.tool != "":
				acc := r.access[st.tool]
				if acc == "" {
					acc = "read"
				}
				s := &Step{Agent: st.agent, Tool: st.tool, Args: canonical([]byte(st.args)), Access: acc}
				if v := d.Check(s); v != nil {
					p.at, p.v = p.calls, v
					return false
				}
				p.calls++
				o := Outcome{Result: canonical([]byte(st.result))}
				if st.err != "" {
					o.Error, o.ErrorType = true, st.err
				}
				d.Done(s, o)
			}
		}
		return true
	}
	play(r.steps, nil)
	return p
}

func lrOutcome(r *lrRun, p lrPlayed) string {
	switch {
	case !r.loop && p.at >= 0:
		return "false_kill"
	case !r.loop:
		return "ok"
	case p.at < 0:
		return "missed"
	case p.at < p.mark:
		return "early"
	}
	return "detected"
}

// lrKnown lists the runs whose outcome is not their label's, each with why.
var lrKnown = map[string]string{
	// Different questions, the same three records each time: rephrase ties
	// askings that share no word by the records they find (synonyms only),
	// and cannot tell a help centre's fallback list from a finding. R6
	// allows the refusal (two answers that brought nothing new); a reader
	// would let the fourth question go. The price of catching synonyms
	// (research-synonym-rewordings, and the held-out probe's).
	"research-kb-fallback-articles": "false_kill",
}

func TestLongRuns(t *testing.T) {
	type agg struct{ n, detected, early, missed, falseK int }
	classes := map[string]*agg{}
	var order []string
	for _, r := range longRuns() {
		p := playLong(r)
		got := lrOutcome(r, p)
		k := "legit " + r.class
		if r.loop {
			k = "loop " + r.class
		}
		a := classes[k]
		if a == nil {
			a = &agg{}
			classes[k] = a
			order = append(order, k)
		}
		a.n++
		switch got {
		case "detected":
			a.detected++
		case "early":
			a.early++
		case "missed":
			a.missed++
		case "false_kill":
			a.falseK++
		}
		msg := ""
		if p.v != nil {
			msg = fmt.Sprintf(" at call %d (mark %d) by %s: %s", p.at, p.mark, p.v.Detector, p.v.Message)
		}
		t.Logf("%-40s %3d calls %-10s%s", r.id, p.calls, got, msg)
		want := "ok"
		if r.loop {
			want = "detected"
			if p.mark < 0 {
				t.Errorf("%s: a loop without a mark", r.id)
			}
		}
		if w, ok := lrKnown[r.id]; ok {
			want = w
		}
		if got != want {
			t.Errorf("%s: %s, want %s", r.id, got, want)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-36s %3s %8s %6s %6s %11s\n", "class", "n", "detected", "early", "missed", "false kills")
	for _, k := range order {
		a := classes[k]
		fmt.Fprintf(&b, "%-36s %3d %8d %6d %6d %11d\n", k, a.n, a.detected, a.early, a.missed, a.falseK)
	}
	t.Log(b.String())
}
