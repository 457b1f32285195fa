// Package tracegen is the writing code the trace generators of the
// folders beside it share (legit25, probe28, probe29): the trace format,
// the checks a generated trace passes before it is written, and the
// builder the held-out probes play their runs on. It lives under testdata
// so the module's builds and tests leave it out; the generators import it
// and run with `go run gen.go` from their folder.
package tracegen

import (
	"encoding/json"
	"fmt"
	"os"
)

// Obj is a JSON object in a call's arguments or result.
type Obj = map[string]any

// Contract is a declared tool's contract.
type Contract struct {
	Access     string   `json:"access,omitempty"`
	Reentrancy string   `json:"reentrancy,omitempty"`
	Key        []string `json:"key,omitempty"`
	Retryable  bool     `json:"retryable,omitempty"`
}

// Event is one step of a trace: a model turn, a tool call or a hand-off.
type Event struct {
	ID        string          `json:"id"`
	Parent    *string         `json:"parent"`
	Type      string          `json:"type"`
	Agent     string          `json:"agent,omitempty"`
	Tokens    int64           `json:"tokens,omitempty"`
	Text      string          `json:"text,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	Status    string          `json:"status,omitempty"`
	ErrorType string          `json:"error_type,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	To        string          `json:"to,omitempty"`
	Task      string          `json:"task,omitempty"`
}

// Trace is one labelled run, written as <ID>.json.
type Trace struct {
	ID          string              `json:"id"`
	Description string              `json:"description"`
	Tools       map[string]Contract `json:"tools"`
	Events      []Event             `json:"events"`
	Label       Obj                 `json:"label"`
}

// Raw is v in JSON; a string is quoted as it is.
func Raw(v any) json.RawMessage {
	if s, ok := v.(string); ok {
		b, _ := json.Marshal(s)
		return b
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Ptr is s as an event's parent: nil for "" (the top).
func Ptr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Save writes t to <ID>.json in the current folder, after checking every
// tool it declares is called.
func (t *Trace) Save() {
	for name := range t.Tools {
		used := false
		for _, e := range t.Events {
			used = used || e.Tool == name
		}
		if !used {
			panic(t.ID + ": tool " + name + " declared, never called")
		}
	}
	data, err := json.MarshalIndent(t, "", " ")
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(t.ID+".json", append(data, '\n'), 0o644); err != nil {
		panic(err)
	}
}

// Probe builds one run of a held-out probe: labelled a loop or
// legitimate work, and for a loop marked at its earliest and onset event.
type Probe struct {
	T      *Trace
	agent  string
	up     string // the parent of the next model turn ("" at the top)
	tokens int64
	mark   bool // the next call or hand-off is the loop's earliest and onset
}

// NewProbe starts the run id, labelled loop and kind.
func NewProbe(id, desc string, loop bool, kind string) *Probe {
	return &Probe{T: &Trace{ID: id, Description: desc, Tools: map[string]Contract{}, Label: Obj{"loop": loop, "kind": kind}}, agent: "main"}
}

// Tool declares name with its access, reentrant.
func (r *Probe) Tool(name, access string) *Probe {
	r.T.Tools[name] = Contract{Access: access, Reentrancy: "reentrant"}
	return r
}

// Retryable declares name retryable.
func (r *Probe) Retryable(name string) *Probe {
	c := r.T.Tools[name]
	c.Retryable = true
	r.T.Tools[name] = c
	return r
}

func (r *Probe) add(e Event) string {
	e.ID = fmt.Sprintf("e%d", len(r.T.Events)+1)
	if e.Agent == "" {
		e.Agent = r.agent
	}
	if r.mark && (e.Type == "tool_call" || e.Type == "delegate") {
		r.mark = false
		r.T.Label["earliest"], r.T.Label["onset"] = e.ID, e.ID
	}
	r.T.Events = append(r.T.Events, e)
	return e.ID
}

// Then marks the next call or hand-off as the loop's.
func (r *Probe) Then() { r.mark = true }

// Turn is a model turn saying text; it returns the turn's id.
func (r *Probe) Turn(text string) string {
	r.tokens = (r.tokens*7 + 911) % 2300
	return r.add(Event{Parent: Ptr(r.up), Type: "model", Tokens: 700 + r.tokens, Text: text})
}

// C is one call of a parallel batch or of a turn.
type C struct {
	tool    string
	args    any
	errType string // "" answered ok
	result  any
}

// OK is a call answered with result.
func OK(tool string, args, result any) C { return C{tool: tool, args: args, result: result} }

// Fail is a call answered with an error of errType.
func Fail(tool string, args any, errType string, result any) C {
	return C{tool: tool, args: args, errType: errType, result: result}
}

// Calls is a model turn choosing one or more calls at once (parallel tool
// calls), each answered before the next turn.
func (r *Probe) Calls(say string, cs ...C) {
	m := r.Turn(say)
	for _, x := range cs {
		e := Event{Parent: Ptr(m), Type: "tool_call", Tool: x.tool, Args: Raw(x.args), Status: "ok", Result: Raw(x.result)}
		if x.errType != "" {
			e.Status, e.ErrorType = "error", x.errType
		}
		if _, ok := r.T.Tools[x.tool]; !ok {
			panic(r.T.ID + ": undeclared tool " + x.tool)
		}
		r.add(e)
	}
}

// Delegate hands task to agent to; body plays the sub-agent's turns; the
// sub-agent's last turn says verdict.
func (r *Probe) Delegate(say, to, task string, body func(), verdict string) {
	m := r.Turn(say)
	r.DelegateFrom(m, to, task, body, verdict)
}

// DelegateFrom is Delegate from the model turn m already taken.
func (r *Probe) DelegateFrom(m, to, task string, body func(), verdict string) {
	d := r.add(Event{Parent: Ptr(m), Type: "delegate", To: to, Task: task})
	saveA, saveUp := r.agent, r.up
	r.agent, r.up = to, d
	if body != nil {
		body()
	}
	r.Turn(verdict)
	r.agent, r.up = saveA, saveUp
}

// Write ends the run with a last turn and saves it, after checking a loop
// is marked and legitimate work is not.
func (r *Probe) Write() {
	if l := r.T.Label; l["loop"] == true && l["earliest"] == nil {
		panic(r.T.ID + ": a loop without its mark")
	}
	if l := r.T.Label; l["loop"] == false && l["earliest"] != nil {
		panic(r.T.ID + ": legitimate work with a mark")
	}
	r.Turn("Done.")
	r.T.Save()
}

// Clock is the n-th second after 09:00 on the probes' day, with
// milliseconds.
func Clock(n int) string {
	return fmt.Sprintf("2026-12-07T%02d:%02d:%02d.%03dZ", 9+n/3600, (n/60)%60, n%60, (n*37)%1000)
}
