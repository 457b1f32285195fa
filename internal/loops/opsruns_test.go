package loops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The operations probe: the fourth held-out probe, runs by kinds of agent
// and tools none of the earlier three (heldout_test.go, runs_test.go,
// longruns_test.go) uses — a data-pipeline agent backfilling partitions and
// listing a bucket, a scheduling agent reading free/busy and moving events,
// an infrastructure agent driving kubectl, terraform and a batch CLI, a
// spreadsheet agent, a mail-triage agent, a translation agent with a
// glossary and a translation memory, a code reviewer on a pull request, a
// CI fixer polling a pipeline, a web-form filler, and delegation chains
// (a localisation lead, an incident commander). Written before reading the
// detectors, by its own writer, and played by its own driver: each turn a
// model call whose text is reported, then the turn's calls (several in
// parallel: all checked before any is done, done last first), a hand-off's
// sub-agent under its own name with the delegation stack.
//
// Each run is labelled by what a careful reader would say under the
// benchmark's rules. Legit runs are long and repetitive but progress:
// pagination by continuation token and GraphQL cursor, polling whose state
// or counts move, batches of alike items answered alike (the same "no
// slot", "Approved", "state: COMPLETED" for different questions), retries
// after real errors that then succeed. Loops leave no exact repeat most of
// the time: arguments paraphrased, reordered, renamed; a cursor that comes
// back; polling whose only change is a clock (an age, an elapsed time, a
// queued duration); two states in turn; retries of one failure with
// cosmetic changes; a form whose Next button does not advance. A loop is
// refused at or after its mark, the first call a reader could refuse.

type opCall struct {
	tool, args, result string
	err                string // error type; "" for a success
}

type opStep struct {
	agent string
	say   string
	calls []opCall // one turn's calls, parallel when more than one
	mark  bool     // the first call of this turn is the first a reader could refuse
	// a hand-off
	to, task, verdict string
	inner             []opStep
}

type opRun struct {
	id, kind  string
	loop      bool
	access    map[string]string
	retryable map[string]bool
	steps     []opStep
}

type opb struct {
	r     *opRun
	agent string
	dst   *[]opStep
	next  bool
}

func opRunOf(id, kind string, loop bool) *opb {
	b := &opb{r: &opRun{id: id, kind: kind, loop: loop, access: map[string]string{}, retryable: map[string]bool{}}}
	b.dst = &b.r.steps
	return b
}

func (b *opb) as(agent string) *opb { b.agent = agent; return b }

func (b *opb) writes(tools ...string) *opb {
	for _, t := range tools {
		b.r.access[t] = "write"
	}
	return b
}

func (b *opb) retryable(tools ...string) *opb {
	for _, t := range tools {
		b.r.retryable[t] = true
	}
	return b
}

// opJSON is v as the runtime hands it on: canonical JSON (keys sorted, no
// insignificant space, numbers as written). A string that is JSON already
// is read first; any other string is a text result.
func opJSON(v any) string {
	if s, ok := v.(string); ok {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var x any
		if dec.Decode(&x) == nil && !dec.More() {
			v = x
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func (b *opb) turn(say string, calls ...opCall) *opb {
	*b.dst = append(*b.dst, opStep{agent: b.agent, say: say, calls: calls, mark: b.next})
	b.next = false
	return b
}

// do is a turn of one call that succeeded.
func (b *opb) do(say, tool string, args, result any) *opb {
	return b.turn(say, opCall{tool: tool, args: opJSON(args), result: opJSON(result)})
}

// fail is a turn of one call that failed.
func (b *opb) fail(say, tool string, args any, errType, msg string) *opb {
	return b.turn(say, opCall{tool: tool, args: opJSON(args), result: opJSON(msg), err: errType})
}

// from marks the next turn's first call as the first a reader could refuse.
func (b *opb) from() *opb { b.next = true; return b }

func opOK(tool string, args, result any) opCall {
	return opCall{tool: tool, args: opJSON(args), result: opJSON(result)}
}

// hand hands a task to another agent, whose turns fn writes.
func (b *opb) hand(say, to, task, verdict string, fn func(*opb)) *opb {
	st := opStep{agent: b.agent, say: say, to: to, task: task, verdict: verdict, mark: b.next}
	b.next = false
	if fn != nil {
		in := &opb{r: b.r, agent: to, dst: &st.inner}
		fn(in)
	}
	*b.dst = append(*b.dst, st)
	return b
}

type opPlayed struct {
	at, mark, calls int
	v               *Verdict
}

func playOps(r *opRun) opPlayed {
	d := New(nil)
	p := opPlayed{at: -1, mark: -1}
	var play func(steps []opStep, chain []string) bool
	play = func(steps []opStep, chain []string) bool {
		for _, st := range steps {
			agent := st.agent
			if agent == "" {
				agent = "main"
			}
			if st.say != "" {
				m := &Step{Kind: ModelCall, Agent: st.agent, Tokens: 800}
				d.Check(m)
				d.Done(m, Outcome{Result: Text(st.say)})
			}
			if st.mark && p.mark < 0 {
				p.mark = p.calls
			}
			if st.to != "" {
				s := &Step{Kind: Delegation, Agent: st.agent, To: st.to, Task: st.task}
				if len(chain) > 0 {
					s.Chain = append(append([]string(nil), chain...), agent)
				}
				if v := d.Check(s); v != nil {
					p.at, p.v = p.calls, v
					return false
				}
				p.calls++
				if !play(st.inner, append(append([]string(nil), chain...), agent)) {
					return false
				}
				d.Done(s, Outcome{Result: Text(st.verdict)})
				continue
			}
			steps := make([]*Step, 0, len(st.calls))
			for _, c := range st.calls {
				acc := r.access[c.tool]
				if acc == "" {
					acc = "read"
				}
				s := &Step{Agent: st.agent, Tool: c.tool, Args: []byte(c.args), Access: acc, Retryable: r.retryable[c.tool]}
				if v := d.Check(s); v != nil {
					p.at, p.v = p.calls, v
					return false
				}
				p.calls++
				steps = append(steps, s)
			}
			for i := len(steps) - 1; i >= 0; i-- {
				c := st.calls[i]
				o := Outcome{Result: []byte(c.result)}
				if c.err != "" {
					o.Error, o.ErrorType = true, c.err
				}
				d.Done(steps[i], o)
			}
		}
		return true
	}
	play(r.steps, nil)
	return p
}

func opOutcome(r *opRun, p opPlayed) string {
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

// opKnown lists the runs whose outcome is not their label's, each with why.
var opKnown = map[string]string{
	// On main when the probe was written (769ffd3): 11 of 22 loops detected
	// (none early), 2 of 20 legit runs refused. What is left:
	//
	// Five different e-mails looked up in a help centre that finds nothing
	// and offers the same three popular articles: records tie askings
	// that share no word (synonyms only), and a fallback list cannot be
	// told from a finding without knowing what the words mean. R6 allows
	// the refusal; the long-run probe's research-kb-fallback-articles is
	// the same trade.
	"mail-helpcenter-popular-articles": "false_kill",
	// The sentence is reworded and the options change with it (formality
	// renamed, a target language as de-DE): the arguments but the free text
	// differ, and a translation shares no word with its source.
	"translate-same-sentence-respelled": "missed",
}

func TestOpsRuns(t *testing.T) {
	type agg struct{ n, detected, early, missed, falseK int }
	kinds := map[string]*agg{}
	var order []string
	var tot [2]agg
	for _, r := range opsRuns() {
		p := playOps(r)
		got := opOutcome(r, p)
		k := "legit " + r.kind
		i := 0
		if r.loop {
			k, i = "loop "+r.kind, 1
		}
		a := kinds[k]
		if a == nil {
			a = &agg{}
			kinds[k] = a
			order = append(order, k)
		}
		for _, a := range []*agg{a, &tot[i]} {
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
		}
		msg := ""
		if p.v != nil {
			msg = fmt.Sprintf(" at call %d (mark %d) by %s: %s", p.at, p.mark, p.v.Detector, p.v.Message)
		}
		t.Logf("%-44s %3d calls %-10s%s", r.id, p.calls, got, msg)
		want := "ok"
		if r.loop {
			want = "detected"
			if p.mark < 0 {
				t.Errorf("%s: a loop without a mark", r.id)
			}
		}
		if w, ok := opKnown[r.id]; ok {
			want = w
		}
		if got != want {
			t.Errorf("%s: %s, want %s", r.id, got, want)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-30s %3s %8s %6s %6s %11s\n", "kind", "n", "detected", "early", "missed", "false kills")
	for _, k := range order {
		a := kinds[k]
		fmt.Fprintf(&b, "%-30s %3d %8d %6d %6d %11d\n", k, a.n, a.detected, a.early, a.missed, a.falseK)
	}
	fmt.Fprintf(&b, "%-30s %3d %8d %6d %6d %11d\n", "all loops", tot[1].n, tot[1].detected, tot[1].early, tot[1].missed, tot[1].falseK)
	fmt.Fprintf(&b, "%-30s %3d %8d %6d %6d %11d\n", "all legit", tot[0].n, tot[0].detected, tot[0].early, tot[0].missed, tot[0].falseK)
	t.Log(b.String())
}
