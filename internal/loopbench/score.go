package loopbench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/agentreach/reach/internal/callgraph"
)

// Flag is a detector's verdict on one trace: the first refused event.
type Flag struct {
	ID      string  `json:"id"`
	Flagged *string `json:"flagged"`
	Reason  string  `json:"reason"`
}

// Baselines are the step-counting detectors of today's frameworks, computed
// by the same harness on the same traces (FORMAT.md).
var Baselines = []struct {
	Name string
	Run  func(*Trace) Flag
}{
	{"recursion_limit", recursionLimit},
	{"consecutive_3", consecutive3},
	{"name_stack", nameStack},
}

func flagAt(t *Trace, i int, reason string) Flag {
	id := t.Events[i].ID
	return Flag{ID: t.ID, Flagged: &id, Reason: reason}
}

// recursionLimit refuses the 26th event (LangGraph's default limit of 25).
func recursionLimit(t *Trace) Flag {
	if len(t.Events) > 25 {
		return flagAt(t, 25, "step 26 exceeds the recursion limit of 25")
	}
	return Flag{ID: t.ID}
}

// consecutive3 refuses the third tool call in a row with the same tool and
// normalized arguments.
func consecutive3(t *Trace) Flag {
	var last string
	run := 0
	for i, e := range t.Events {
		if e.Type != "tool_call" {
			continue
		}
		k := e.Tool + " " + canon(e.Args)
		if k == last {
			run++
		} else {
			last, run = k, 1
		}
		if run == 3 {
			return flagAt(t, i, "third identical call in a row")
		}
	}
	return Flag{ID: t.ID}
}

// nameStack refuses a tool call whose tool name is among its ancestors.
func nameStack(t *Trace) Flag {
	for i, e := range t.Events {
		if e.Type != "tool_call" {
			continue
		}
		for _, a := range t.ancestors(i) {
			if t.Events[a].Type == "tool_call" && t.Events[a].Tool == e.Tool {
				return flagAt(t, i, e.Tool+" is already on the stack")
			}
		}
	}
	return Flag{ID: t.ID}
}

func canon(b json.RawMessage) string {
	c, err := callgraph.Normalize(nil, b)
	if err != nil {
		return string(b)
	}
	return string(c)
}

// Outcome is how one flag scores against its trace's label.
type Outcome struct {
	Kind       string
	Loop       bool
	Detected   bool
	FalseKill  bool
	Missed     bool
	Delay      int   // events from the onset to the flag (detected loops)
	TokensLate int64 // model tokens from the onset to the flag, or to the end when missed
}

// Score scores f against t's label (FORMAT.md "Scoring").
func Score(t *Trace, f Flag) Outcome {
	o := Outcome{Kind: t.Label.Kind, Loop: t.Label.Loop}
	fi := -1
	if f.Flagged != nil {
		fi = t.Index(*f.Flagged)
	}
	if !t.Label.Loop {
		o.FalseKill = fi >= 0
		return o
	}
	earliest, onset := t.Index(t.Label.Earliest), t.Index(t.Label.Onset)
	if onset < 0 {
		onset = earliest
	}
	switch {
	case fi < 0:
		o.Missed = true
	case fi < earliest:
		o.FalseKill = true
	default:
		o.Detected = true
		o.Delay = fi - onset
	}
	end := len(t.Events)
	if o.Detected {
		end = fi + 1
	}
	if !o.FalseKill {
		for i := onset; i < end && i < len(t.Events); i++ {
			if t.Events[i].Type == "model" {
				o.TokensLate += t.Events[i].Tokens
			}
		}
	}
	return o
}

// Row is one line of the table: a detector's figures over some traces.
type Row struct {
	Detector      string  `json:"detector"`
	Kind          string  `json:"kind"`
	Traces        int     `json:"traces"`
	LoopTraces    int     `json:"loop_traces"`
	Detected      int     `json:"detected"`
	FalseKills    int     `json:"false_kills"`
	Detection     float64 `json:"detection"`       // detected / loop traces (NaN without loop traces)
	FalseKillRate float64 `json:"false_kill_rate"` // false kills / traces
	MeanDelay     float64 `json:"mean_delay"`
	P90Delay      float64 `json:"p90_delay"`
	TokensLate    int64   `json:"tokens_after_onset"`
}

func aggregate(detector, kind string, os []Outcome) Row {
	r := Row{Detector: detector, Kind: kind, Traces: len(os)}
	var delays []int
	for _, o := range os {
		if o.Loop {
			r.LoopTraces++
		}
		if o.Detected {
			r.Detected++
			delays = append(delays, o.Delay)
		}
		if o.FalseKill {
			r.FalseKills++
		}
		r.TokensLate += o.TokensLate
	}
	r.Detection = math.NaN()
	if r.LoopTraces > 0 {
		r.Detection = float64(r.Detected) / float64(r.LoopTraces)
	}
	if r.Traces > 0 {
		r.FalseKillRate = float64(r.FalseKills) / float64(r.Traces)
	}
	r.MeanDelay, r.P90Delay = math.NaN(), math.NaN()
	if len(delays) > 0 {
		sum := 0
		for _, d := range delays {
			sum += d
		}
		r.MeanDelay = float64(sum) / float64(len(delays))
		slices.Sort(delays)
		r.P90Delay = float64(delays[int(math.Ceil(0.9*float64(len(delays))))-1])
	}
	return r
}

// Report holds every detector's flags and figures.
type Report struct {
	Traces    []*Trace
	Flags     map[string][]Flag // detector -> one flag per trace, in Traces order
	Detectors []string          // "reach" first, then the baselines
}

// Rows returns one row per detector and kind, then one overall row per detector.
func (r *Report) Rows() []Row {
	kinds := map[string]bool{}
	for _, t := range r.Traces {
		kinds[t.Label.Kind] = true
	}
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var rows []Row
	for _, d := range r.Detectors {
		byKind := map[string][]Outcome{}
		var all []Outcome
		for i, t := range r.Traces {
			o := Score(t, r.Flags[d][i])
			byKind[t.Label.Kind] = append(byKind[t.Label.Kind], o)
			all = append(all, o)
		}
		for _, k := range ks {
			rows = append(rows, aggregate(d, k, byKind[k]))
		}
		rows = append(rows, aggregate(d, "overall", all))
	}
	return rows
}

// Overall returns the overall row of a detector.
func (r *Report) Overall(detector string) Row {
	for _, row := range r.Rows() {
		if row.Detector == detector && row.Kind == "overall" {
			return row
		}
	}
	return Row{}
}

// WriteJSONLines writes one flag a line for detector: {"id", "flagged", "reason"}.
func (r *Report) WriteJSONLines(w io.Writer, detector string) error {
	enc := json.NewEncoder(w)
	for _, f := range r.Flags[detector] {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

// WriteTable writes the per-kind table: reach's figures with each
// baseline's detection and false kills beside them, then the overall rows.
func (r *Report) WriteTable(w io.Writer) {
	rows := r.Rows()
	get := func(det, kind string) Row {
		for _, row := range rows {
			if row.Detector == det && row.Kind == kind {
				return row
			}
		}
		return Row{}
	}
	var kinds []string
	for _, row := range rows {
		if row.Detector == r.Detectors[0] {
			kinds = append(kinds, row.Kind)
		}
	}
	fmt.Fprintf(w, "%-24s %6s  %-28s", "kind", "traces", "reach det  fk  delay(mean/p90)  tok-late")
	for _, b := range r.Detectors[1:] {
		fmt.Fprintf(w, "  %-18s", b+" det/fk")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, strings.Repeat("-", 24+8+30+20*(len(r.Detectors)-1)))
	for _, k := range kinds {
		if k == "overall" {
			fmt.Fprintln(w, strings.Repeat("-", 24+8+30+20*(len(r.Detectors)-1)))
		}
		me := get(r.Detectors[0], k)
		fmt.Fprintf(w, "%-24s %6d  %4s %3d  %5s/%-5s %10d", k, me.Traces, pct(me.Detection), me.FalseKills, num(me.MeanDelay), num(me.P90Delay), me.TokensLate)
		for _, b := range r.Detectors[1:] {
			br := get(b, k)
			fmt.Fprintf(w, "  %10s", fmt.Sprintf("%s/%d", pct(br.Detection), br.FalseKills))
			fmt.Fprintf(w, "%8s", "")
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-16s %9s %11s %10s %9s %14s\n", "detector", "detection", "false kills", "mean delay", "p90 delay", "tokens late")
	for _, d := range r.Detectors {
		o := get(d, "overall")
		fmt.Fprintf(w, "%-16s %9s %5d/%-5d %10s %9s %14d\n", d, pct(o.Detection), o.FalseKills, o.Traces, num(o.MeanDelay), num(o.P90Delay), o.TokensLate)
	}
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.2f", f)
}

func num(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.1f", f)
}
