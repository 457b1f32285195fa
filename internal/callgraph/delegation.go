package callgraph

import (
	"encoding/json"

	"github.com/agentreach/reach/internal/budget"
)

// Delegation describes a hand-off of a sub-task to another agent (C6):
// what the runtime's Delegate is given (reach.Delegation).
type Delegation struct {
	Agent string // the receiving agent
	Task  string // the sub-task
	ID    string // the sub-request's id; if empty, a new one
	// Budget gives explicit amounts, each capped at what the parent has left
	// (a negative one, or a cost NaN or infinite, is none).
	Budget *budget.Budget
	// Fraction of the parent's remaining budget for every dimension Budget
	// does not give; if zero (or out of (0, 1], NaN too), 1 (all that remains;
	// spend still counts for both).
	Fraction float64
	// Reentrancy is the receiving agent's contract (G2) for a hand-off
	// while the agent is already on the delegation stack (it is the agent
	// of the request or of a delegation the hand-off nests in); if empty,
	// NonReentrant, as for tools. Whatever the contract, a hand-off of the
	// same normalized task to an agent already working on it up the stack
	// is a cycle.
	Reentrancy Reentrancy
	// Key names the fields of Metadata that key a Keyed agent: it may be
	// re-entered with other values of them only.
	Key []string
	// Metadata is a JSON object describing the hand-off (an A2A message's
	// metadata), read for Key.
	Metadata json.RawMessage
	// OnViolation is what a cycle or broken contract does; if empty, Refuse.
	OnViolation Mode
}
