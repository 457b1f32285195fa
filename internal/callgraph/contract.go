package callgraph

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/agentreach/reach/internal/fault"
)

// Reentrancy is a tool's reentrancy contract (G2): may the tool be entered
// again while a call of it is on the stack?
type Reentrancy string

// Reentrancy contracts.
const (
	// NonReentrant tools may not be re-entered at all (the default): an open
	// transaction, a paging cursor, a lock.
	NonReentrant Reentrancy = "non_reentrant"
	// Reentrant tools may be re-entered, but a call whose tool and normalized
	// arguments equal an ancestor's is a cycle.
	Reentrant Reentrancy = "reentrant"
	// Keyed tools may be re-entered with other values of the Key fields only.
	Keyed Reentrancy = "keyed"
)

// Mode says what a guard does when its check fails (G3).
type Mode string

// Modes.
const (
	Refuse Mode = "refuse" // the default: the call is refused
	Warn   Mode = "warn"   // the call runs; the violation is recorded and noted to the model
	Allow  Mode = "allow"  // the check is off
)

// CheckContract defaults and checks a reentrancy contract, a tool's or an
// agent's: an empty reentrancy is non_reentrant and an empty mode refuse;
// a keyed one needs its key (hasKey; needKey says what it is). Errors
// begin with who ("tool x", "delegate to x").
func CheckContract(who string, re *Reentrancy, on *Mode, hasKey bool, needKey string) error {
	switch *re {
	case "":
		*re = NonReentrant
	case NonReentrant, Reentrant:
	case Keyed:
		if !hasKey {
			return fmt.Errorf("%s: %s", who, needKey)
		}
	default:
		return fmt.Errorf("%s: unknown reentrancy %q (want non_reentrant, reentrant or keyed)", who, *re)
	}
	switch *on {
	case "":
		*on = Refuse
	case Refuse, Warn, Allow:
	default:
		return fmt.Errorf("%s: unknown mode %q (want refuse, warn or allow)", who, *on)
	}
	return nil
}

// CycleError is the graph stage's refusal of a call of name (args, a
// preview of its arguments) that an ancestor at depth, called by by,
// already makes with the same arguments.
func CycleError(name, args string, depth int, by string) *fault.Error {
	return &fault.Error{Guard: "graph", Type: fault.TypeCycle, Code: "cycle",
		Message: fmt.Sprintf("This would create a cycle: %s %s is already on your call stack at depth %d (called by %s).",
			name, args, depth, by),
		Suggestion: "Choose a different approach or answer with what you have."}
}

// ReentryError is the graph stage's refusal of a non-reentrant tool name
// that is running at depth, called by by.
func ReentryError(name string, depth int, by string) *fault.Error {
	return &fault.Error{Guard: "graph", Type: fault.TypeReentrancy, Code: "reentrancy",
		Message: fmt.Sprintf("%s is already running on your call stack at depth %d (called by %s) and is not reentrant: "+
			"it may hold state such as an open transaction or a cursor, and may not be entered again until that call finishes.",
			name, depth, by),
		Suggestion: fmt.Sprintf("Finish this step without calling %s again, or return to the running %s call and let it complete.", name, name)}
}

// KeyedError is the graph stage's refusal of a keyed tool name called with
// args whose key fields' values equal those of its call running at depth,
// called by by.
func KeyedError(name string, key []string, args []byte, depth int, by string) *fault.Error {
	return &fault.Error{Guard: "graph", Type: fault.TypeReentrancy, Code: "keyed_reentrancy",
		Message: fmt.Sprintf("%s with %s is already running on your call stack at depth %d (called by %s); "+
			"it may be re-entered only with a different %s.", name, KeyValues(args, key), depth, by, strings.Join(key, ", ")),
		Suggestion: "Use a different " + strings.Join(key, ", ") + ", or let the running call finish first."}
}

// AgentCycleError is the refusal of a hand-off of task (a preview) to
// agent, which is already working on the same task up the delegation
// stack, handed to it by the agent by.
func AgentCycleError(agent, task, by string) *fault.Error {
	return &fault.Error{Guard: "graph", Type: fault.TypeCycle, Code: "delegation_cycle",
		Message: fmt.Sprintf("This would create a cycle: agent %s is already working on %s up the delegation stack (handed to it by the %s agent); handing it the same task again goes round in a circle.",
			agent, task, by),
		Suggestion: "Do this part yourself, change the task (say what must be different), or answer with what you have."}
}

// AgentReentryError is the refusal of a hand-off to a non-reentrant agent
// that is on the delegation stack already (where says how).
func AgentReentryError(agent, where string) *fault.Error {
	return &fault.Error{Guard: "graph", Type: fault.TypeReentrancy, Code: "agent_reentrancy",
		Message: fmt.Sprintf("Agent %s is already on the delegation stack (%s) and is not reentrant: it may not be handed a task until that one is done.",
			agent, where),
		Suggestion: fmt.Sprintf("Finish this step without handing work back to %s, or return your answer and let %s continue.", agent, agent)}
}

// AgentKeyedError is the refusal of a hand-off to a keyed agent whose key
// fields in meta equal those of its task up the delegation stack (where
// says how it is there).
func AgentKeyedError(agent string, key []string, meta []byte, where string) *fault.Error {
	keys := strings.Join(key, ", ")
	return &fault.Error{Guard: "graph", Type: fault.TypeReentrancy, Code: "agent_keyed_reentrancy",
		Message: fmt.Sprintf("Agent %s is already working with %s up the delegation stack (%s); it may be re-entered only with a different %s.",
			agent, KeyValues(meta, key), where, keys),
		Suggestion: "Use a different " + keys + ", or let the running task finish first."}
}

// AgentMeta is the metadata of a hand-off to a keyed agent, normalized
// for its key's comparisons: a JSON object (empty is {}). Errors begin
// with "delegate to agent".
func AgentMeta(agent string, metadata []byte) ([]byte, error) {
	raw := bytes.TrimSpace(metadata)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	m, err := Normalize(nil, raw)
	if err != nil || m[0] != '{' {
		return nil, fmt.Errorf("delegate to %s: the metadata is not a JSON object", agent)
	}
	return m, nil
}
