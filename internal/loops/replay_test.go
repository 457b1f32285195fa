package loops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentreach/reach/internal/callgraph"
)

// A trace in the loop benchmark's format (../../../shared/loopbench/FORMAT.md).
type trace struct {
	ID          string              `json:"id"`
	Description string              `json:"description"`
	Tools       map[string]toolSpec `json:"tools"`
	Events      []event             `json:"events"`
	Label       label               `json:"label"`
}

type toolSpec struct {
	Access     string   `json:"access"`
	Reentrancy string   `json:"reentrancy"`
	Key        []string `json:"key"`
	Retryable  bool     `json:"retryable"`
}

type event struct {
	ID        string          `json:"id"`
	Parent    *string         `json:"parent"`
	Type      string          `json:"type"`
	Agent     string          `json:"agent"`
	Tokens    int64           `json:"tokens"`
	Text      string          `json:"text"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Status    string          `json:"status"`
	ErrorType string          `json:"error_type"`
	Result    json.RawMessage `json:"result"`
	To        string          `json:"to"`
	Task      string          `json:"task"`
}

type label struct {
	Loop     bool   `json:"loop"`
	Kind     string `json:"kind"`
	Earliest string `json:"earliest"`
	Onset    string `json:"onset"`
}

// outOfScope are the loop kinds that the runtime's call-graph stage refuses by
// looking at ancestors; the loop detectors only must not refuse them early.
var outOfScope = map[string]bool{
	"reentrant_cycle":      true,
	"reentrancy_violation": true,
	"keyed_violation":      true,
}

func loadTrace(path string) (*trace, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t trace
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &t, nil
}

func loadTraces(t testing.TB, dir string) []*trace {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []*trace
	for _, f := range files {
		tr, err := loadTrace(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

// canonical returns the canonical JSON of raw, as the runtime makes it:
// object keys sorted, no insignificant white space, one spelling per string
// and number (7.0 is 7).
func canonical(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return nil
	}
	c, err := callgraph.Normalize(nil, raw)
	if err != nil {
		return raw
	}
	return c
}

func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// replayed is what happened when a trace went through a Detector.
type replayed struct {
	flag    int // index of the first refused event, -1 if none
	verdict *Verdict
}

// replay feeds tr's events through d as the runtime would: Check before each
// event; a model event's Done (with its text) right after its Check; a tool
// call's or delegation's Done once the next event is not one of its
// descendants (or at the end), innermost first.
func replay(d *Detector, tr *trace) replayed {
	index := make(map[string]int, len(tr.Events))
	for i, e := range tr.Events {
		index[e.ID] = i
	}
	parent := func(i int) int {
		p := tr.Events[i].Parent
		if p == nil {
			return -1
		}
		if j, ok := index[*p]; ok {
			return j
		}
		return -1
	}
	isAncestor := func(a, i int) bool {
		for j := parent(i); j >= 0; j = parent(j) {
			if j == a {
				return true
			}
		}
		return false
	}
	type open struct {
		i int
		s *Step
	}
	var stack []open
	closeOne := func(o open, upto int) {
		e := tr.Events[o.i]
		var out Outcome
		switch e.Type {
		case "tool_call":
			out.Result = canonical(e.Result)
			if e.Status == "error" {
				out.Error = true
				out.ErrorType = e.ErrorType
			}
		case "delegate":
			verdict := ""
			for j := o.i + 1; j < upto; j++ {
				if tr.Events[j].Type == "model" && tr.Events[j].Text != "" && isAncestor(o.i, j) {
					verdict = tr.Events[j].Text
				}
			}
			out.Result = marshal(verdict)
		}
		d.Done(o.s, out)
	}
	for i, e := range tr.Events {
		for k := len(stack) - 1; k >= 0; k-- {
			if !isAncestor(stack[k].i, i) {
				closeOne(stack[k], i)
				stack = slices.Delete(stack, k, k+1)
			}
		}
		depth := 0
		for j := parent(i); j >= 0; j = parent(j) {
			if tr.Events[j].Type == "tool_call" {
				depth++
			}
		}
		s := &Step{Agent: e.Agent, Depth: depth}
		switch e.Type {
		case "model":
			s.Kind, s.Tokens = ModelCall, e.Tokens
		case "tool_call":
			spec := tr.Tools[e.Tool]
			s.Kind, s.Tool, s.Args = ToolCall, e.Tool, canonical(e.Args)
			s.Access, s.Retryable = spec.Access, spec.Retryable
			if s.Access == "" {
				s.Access = "read"
			}
		case "delegate":
			s.Kind, s.To, s.Task = Delegation, e.To, e.Task
			s.Chain = chainOf(tr, parent, i)
		}
		if v := d.Check(s); v != nil {
			return replayed{flag: i, verdict: v}
		}
		switch e.Type {
		case "model":
			d.Done(s, Outcome{Result: marshal(e.Text)})
		default:
			stack = append(stack, open{i, s})
		}
	}
	for k := len(stack) - 1; k >= 0; k-- {
		closeOne(stack[k], len(tr.Events))
	}
	return replayed{flag: -1}
}

// chainOf returns the agents on the delegation stack of event i: the agent
// of the first hand-off among its ancestors, then each receiver down to
// event i's agent; nil when no hand-off is among them.
func chainOf(tr *trace, parent func(int) int, i int) []string {
	var rev []string
	for j := parent(i); j >= 0; j = parent(j) {
		if e := tr.Events[j]; e.Type == "delegate" {
			rev = append(rev, agentName(e.To), agentName(e.Agent))
		}
	}
	if len(rev) == 0 {
		return nil
	}
	// rev holds, innermost first, each hand-off's receiver and sender.
	var out []string
	for k := len(rev) - 1; k >= 0; k-- {
		if len(out) == 0 || out[len(out)-1] != rev[k] {
			out = append(out, rev[k])
		}
	}
	return out
}

func agentName(a string) string {
	if a == "" {
		return "main"
	}
	return a
}

// score is one trace's result against its label.
type score struct {
	tr       *trace
	r        replayed
	detected bool
	falseK   bool // a refusal on a no-loop trace, or before earliest
	missed   bool
	delay    int
}

func judge(tr *trace, r replayed) score {
	sc := score{tr: tr, r: r}
	at := func(id string) int {
		for i, e := range tr.Events {
			if e.ID == id {
				return i
			}
		}
		return -1
	}
	if !tr.Label.Loop {
		sc.falseK = r.flag >= 0
		return sc
	}
	switch earliest := at(tr.Label.Earliest); {
	case r.flag < 0:
		sc.missed = true
	case r.flag < earliest:
		sc.falseK = true
	default:
		sc.detected = true
		sc.delay = r.flag - at(tr.Label.Onset)
	}
	return sc
}

func (sc score) String() string {
	what := "-"
	if sc.r.flag >= 0 {
		what = sc.tr.Events[sc.r.flag].ID + " " + sc.r.verdict.Detector
	}
	state := "ok"
	switch {
	case sc.falseK:
		state = "FALSE KILL"
	case sc.missed:
		state = "missed"
	case sc.detected:
		state = fmt.Sprintf("detected (delay %+d)", sc.delay)
	}
	l := sc.tr.Label
	return fmt.Sprintf("%-40s %-22s earliest=%-4s onset=%-4s flag=%-22s %s", sc.tr.ID, l.Kind, l.Earliest, l.Onset, what, state)
}

// runSuite replays traces with default options and reports per kind; it fails
// on any false kill, and when detection of in-scope loop kinds is below min.
func runSuite(t *testing.T, traces []*trace, min float64) {
	t.Helper()
	type agg struct {
		n, detected, falseK, missed, delaySum int
		loop                                  bool
	}
	kinds := map[string]*agg{}
	var inScope, inDetected int
	for _, tr := range traces {
		sc := judge(tr, replay(New(nil), tr))
		t.Log(sc)
		if sc.r.verdict != nil {
			t.Logf("    %s: %s | %s", sc.r.verdict.Detector, sc.r.verdict.Message, sc.r.verdict.Suggestion)
		}
		a := kinds[tr.Label.Kind]
		if a == nil {
			a = &agg{loop: tr.Label.Loop}
			kinds[tr.Label.Kind] = a
		}
		a.n++
		if sc.detected {
			a.detected++
			a.delaySum += sc.delay
		}
		if sc.falseK {
			a.falseK++
			t.Errorf("%s: false kill: %s", tr.ID, sc)
		}
		if sc.missed {
			a.missed++
		}
		if tr.Label.Loop && !outOfScope[tr.Label.Kind] {
			inScope++
			if sc.detected {
				inDetected++
			}
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-24s %5s %9s %6s %11s %10s\n", "kind", "n", "detected", "missed", "false kills", "mean delay")
	for _, k := range names {
		a := kinds[k]
		det, delay := "-", "-"
		if a.loop {
			det = fmt.Sprintf("%d/%d", a.detected, a.n)
			if a.detected > 0 {
				delay = fmt.Sprintf("%+.1f", float64(a.delaySum)/float64(a.detected))
			}
		}
		scope := ""
		if outOfScope[k] {
			scope = " (out of scope)"
		}
		fmt.Fprintf(&b, "%-24s %5d %9s %6d %11d %10s%s\n", k, a.n, det, a.missed, a.falseK, delay, scope)
	}
	rate := 1.0
	if inScope > 0 {
		rate = float64(inDetected) / float64(inScope)
	}
	fmt.Fprintf(&b, "in-scope detection: %d/%d = %.3f", inDetected, inScope, rate)
	t.Log(b.String())
	if rate < min {
		t.Errorf("in-scope detection %.3f < %.2f", rate, min)
	}
}

// TestTraces replays the traces under testdata: no false kills, and every
// in-scope loop detected.
func TestTraces(t *testing.T) {
	traces := loadTraces(t, "testdata")
	if len(traces) == 0 {
		t.Fatal("no traces in testdata")
	}
	runSuite(t, traces, 1.0)
}

// TestPublicTraces replays the loop benchmark's public traces when they are
// present next to the repository.
func TestPublicTraces(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "loopbench", "traces")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no public traces: %v", err)
	}
	runSuite(t, loadTraces(t, dir), 0.95)
}

// TestPublicTracesV2 replays the loop benchmark's second public set (harder
// kinds, each with a legit twin) when it is present next to the repository.
func TestPublicTracesV2(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "loopbench", "traces-v2")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no public traces: %v", err)
	}
	runSuite(t, loadTraces(t, dir), 0.85)
}

// TestHashSetGrowsBeforeForgetting: a full bucket in a set below its size
// bound makes the set grow; nothing added is forgotten, whatever bucket the
// process's hash seed puts it in.
func TestHashSetGrowsBeforeForgetting(t *testing.T) {
	var h hashSet
	h.init(1 << 12)
	var xs []uint64
	for i := range 6 { // six values in one bucket of the smallest table, apart in larger ones
		xs = append(xs, uint64(i)<<11|5<<7|1)
	}
	for _, x := range xs {
		h.add(x)
	}
	for _, x := range xs {
		if h.add(x) {
			t.Errorf("%#x was forgotten: the set held %d of 6 in one bucket", x, h.len())
		}
	}
}
