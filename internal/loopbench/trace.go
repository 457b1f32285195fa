// Package loopbench runs the loop benchmark: it replays recorded agent
// traces (format v1, see docs/LOOPS.md) through the same runtime and guard
// chain as live traffic, scores the first refusal of each trace against its
// label, and computes the baselines of today's frameworks on the same files.
//
//	traces, _ := loopbench.LoadDir("traces")
//	report := loopbench.Run(traces, nil)
//	report.WriteTable(os.Stdout)
package loopbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Trace is one recorded agent request with its ground-truth label.
type Trace struct {
	ID          string                  `json:"id"`
	Description string                  `json:"description,omitempty"`
	Tools       map[string]ToolContract `json:"tools"`
	Events      []Event                 `json:"events"`
	Label       Label                   `json:"label"`

	// Principal and Tenant are whom the recorded request acted for (from
	// the audit log; a trace file carries neither): a replay begins its
	// request as theirs, so a policy decides it as it decided the original.
	Principal, Tenant string `json:"-"`

	file  string
	index map[string]int
}

// ToolContract is a tool's declared contract in a trace.
type ToolContract struct {
	Access     string   `json:"access,omitempty"`
	Reentrancy string   `json:"reentrancy,omitempty"`
	Key        []string `json:"key,omitempty"`
	Retryable  bool     `json:"retryable,omitempty"`
	// Upstream is the upstream that served the tool, as the audit log
	// recorded it (the gateway's upstream: tag): a replay gives the tool
	// that tag, so a policy scoped to the upstream decides it as it did.
	// Without it, the tool's upstream is its name's part before "__".
	Upstream string `json:"upstream,omitempty"`
}

// Event is one model call, tool call or delegation.
type Event struct {
	ID        string          `json:"id"`
	Parent    *string         `json:"parent"`
	Type      string          `json:"type"` // model, tool_call, delegate
	Agent     string          `json:"agent,omitempty"`
	Tokens    int64           `json:"tokens,omitempty"`
	Text      string          `json:"text,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	Status    string          `json:"status,omitempty"` // ok, error
	ErrorType string          `json:"error_type,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	To        string          `json:"to,omitempty"`
	Task      string          `json:"task,omitempty"`
}

// Label is the ground truth.
type Label struct {
	Loop     bool   `json:"loop"`
	Kind     string `json:"kind"`
	Earliest string `json:"earliest,omitempty"`
	Onset    string `json:"onset,omitempty"`
}

// ParentID returns the event's parent id, or "".
func (e *Event) ParentID() string {
	if e.Parent == nil {
		return ""
	}
	return *e.Parent
}

// Decode reads and checks one trace.
func Decode(data []byte) (*Trace, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var t Trace
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return &t, nil
}

func (t *Trace) check() error {
	if t.ID == "" {
		return fmt.Errorf("trace has no id")
	}
	t.index = make(map[string]int, len(t.Events))
	for i, e := range t.Events {
		if e.ID == "" {
			return fmt.Errorf("event %d has no id", i)
		}
		if _, dup := t.index[e.ID]; dup {
			return fmt.Errorf("event id %s is used twice", e.ID)
		}
		if p := e.ParentID(); p != "" {
			if _, ok := t.index[p]; !ok {
				return fmt.Errorf("event %s: parent %s is not an earlier event", e.ID, p)
			}
		}
		switch e.Type {
		case "model", "delegate":
		case "tool_call":
			if e.Tool == "" {
				return fmt.Errorf("event %s: tool_call without a tool", e.ID)
			}
		default:
			return fmt.Errorf("event %s: unknown type %q (want model, tool_call or delegate)", e.ID, e.Type)
		}
		t.index[e.ID] = i
	}
	for _, id := range []string{t.Label.Earliest, t.Label.Onset} {
		if _, ok := t.index[id]; id != "" && !ok {
			return fmt.Errorf("label names event %s, which is not in the trace", id)
		}
	}
	if t.Label.Loop && t.Label.Earliest == "" {
		return fmt.Errorf("a loop label needs earliest")
	}
	return nil
}

// Index returns the position of event id, or -1.
func (t *Trace) Index(id string) int {
	if i, ok := t.index[id]; ok {
		return i
	}
	return -1
}

// File returns the file the trace was read from, if any.
func (t *Trace) File() string { return t.file }

// LoadDir reads every *.json trace in dir, sorted by file name.
func LoadDir(dir string) ([]*Trace, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.json traces in %s", dir)
	}
	slices.Sort(files)
	var out []*Trace
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		t, err := Decode(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		t.file = f
		out = append(out, t)
	}
	return out, nil
}

// ancestors returns the chain of parent indexes of event i, nearest first.
func (t *Trace) ancestors(i int) []int {
	var out []int
	for p := t.Events[i].ParentID(); p != ""; p = t.Events[t.index[p]].ParentID() {
		out = append(out, t.index[p])
	}
	return out
}

func agentOf(e *Event) string {
	if e.Agent == "" {
		return "main"
	}
	return e.Agent
}
