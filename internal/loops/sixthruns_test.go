package loops

import (
	"fmt"
	"testing"
)

// The sixth probe: written before reading the detectors or the earlier
// probes' runs (their tool names grepped only to leave them out), by the
// agents users run with their frameworks' defaults: a coding agent on MCP
// filesystem, editor and git servers fixing a failing test, a GitHub
// issue triager, a Slack and Linear assistant, a docs agent with a
// retriever, an analyst on CSV files through a pandas REPL and SQL, a
// travel agent on flight and hotel APIs, a devops agent on metrics, logs
// and a cluster, a support agent refunding payments, and agents that hand
// work to each other. Tools keep the access their servers declare: an
// editor that both views and edits, and a shell, are writes.
//
// Half the runs are legit and half loops. A loop is marked at the first
// call a careful reader would refuse, never earlier than the benchmark's
// rules allow; a legit run never reaches a point the rules could refuse.

type sxCall struct {
	tool, args, res, err string
}

type sxTurn struct {
	agent, say string
	calls      []sxCall
	mark       bool
	// a hand-off, whose sub-agent's turns are inner
	to, task, verdict string
	inner             []sxTurn
}

type sxRun struct {
	id, kind string
	loop     bool
	access   map[string]string
	retry    map[string]bool
	turns    []sxTurn
}

type sxw struct {
	run   *sxRun
	agent string
	out   *[]sxTurn
	mark  bool
}

func sxRunOf(id, kind string, loop bool) *sxw {
	r := &sxRun{id: id, kind: kind, loop: loop, access: map[string]string{}, retry: map[string]bool{}}
	return &sxw{run: r, out: &r.turns}
}

func (w *sxw) acc(access string, tools ...string) *sxw {
	for _, t := range tools {
		w.run.access[t] = access
	}
	return w
}

func (w *sxw) retryable(tools ...string) *sxw {
	for _, t := range tools {
		w.run.retry[t] = true
	}
	return w
}

func sxOK(tool string, args, res any) sxCall {
	return sxCall{tool: tool, args: canon(args), res: canon(res)}
}

func sxFail(tool string, args any, errType, msg string) sxCall {
	return sxCall{tool: tool, args: canon(args), res: canon(msg), err: errType}
}

// then marks the next turn's first call as the first a reader could refuse.
func (w *sxw) then() *sxw { w.mark = true; return w }

func (w *sxw) t(say string, calls ...sxCall) *sxw {
	*w.out = append(*w.out, sxTurn{agent: w.agent, say: say, calls: calls, mark: w.mark})
	w.mark = false
	return w
}

func (w *sxw) hand(say, to, task, verdict string, sub func(*sxw)) *sxw {
	h := sxTurn{agent: w.agent, say: say, to: to, task: task, verdict: verdict, mark: w.mark}
	w.mark = false
	if sub != nil {
		sub(&sxw{run: w.run, agent: to, out: &h.inner})
	}
	*w.out = append(*w.out, h)
	return w
}

type sxPlay struct {
	refusedAt, markAt, calls int
	v                        *Verdict
}

// playSx drives a Detector as the runtime does: the model's text, then
// the turn's calls, all checked before any is done; a hand-off's
// sub-agent under its own name, the delegation stack above it.
func playSx(r *sxRun) sxPlay {
	d := New(nil)
	p := sxPlay{refusedAt: -1, markAt: -1}
	var walk func(turns []sxTurn, stack []string) bool
	walk = func(turns []sxTurn, stack []string) bool {
		for _, tn := range turns {
			who := tn.agent
			if who == "" {
				who = "main"
			}
			if tn.say != "" {
				m := &Step{Kind: ModelCall, Agent: tn.agent, Tokens: 800}
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
				s := &Step{Agent: tn.agent, Tool: c.tool, Args: []byte(c.args), Access: a, Retryable: r.retry[c.tool]}
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
	return p
}

func sxOutcome(r *sxRun, p sxPlay) string {
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

// sxKnown lists the runs whose outcome is not their label's, each with why.
var sxKnown = map[string]string{
	// On main when the probe was written (fe35cb9): 10 of 13 loops
	// detected, none early; 0 of 13 legit runs refused. After its fixes
	// 12 and none. What is left:
	//
	// A pandas REPL answers an exception as its result, a success:
	// "KeyError: 'Date'", six times for six different expressions. Sixteen
	// bytes are too little to judge, and each expression is a question new
	// to the agent.
	"csv-keyerror-as-text": "missed",
}

func TestSixthRuns(t *testing.T) {
	runs := sixthRuns()
	if len(runs) < 24 {
		t.Fatalf("%d runs", len(runs))
	}
	seen := map[string]bool{}
	var loops, legit, detected, kills int
	for _, r := range runs {
		if seen[r.id] {
			t.Fatalf("run %s twice", r.id)
		}
		seen[r.id] = true
		p := playSx(r)
		got := sxOutcome(r, p)
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
		if k, found := sxKnown[r.id]; found {
			want = k
		}
		var by string
		if p.v != nil {
			by = p.v.Detector + ": " + p.v.Message
		}
		t.Logf("%-36s %-5v %-10s at %3d mark %3d of %3d  %s", r.id, r.loop, got, p.refusedAt, p.markAt, p.calls, by)
		if got != want {
			t.Errorf("%s: %s, want %s (%s)", r.id, got, want, by)
		}
	}
	t.Logf("sixth probe: %d/%d loops detected, %d/%d legit runs refused", detected, loops, kills, legit)
}

// sxTS is a Slack message's ts, minutes after a morning's start.
func sxTS(min int) string { return fmt.Sprintf("17332%05d.%06d", 38000+min*60, 100+min*7) }

// sxISO is a date-time minutes after a morning's start.
func sxISO(min int) string {
	return fmt.Sprintf("2026-12-03T%02d:%02d:%02dZ", 9+min/60, min%60, (min*17)%60)
}
