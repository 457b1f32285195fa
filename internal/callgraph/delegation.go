package callgraph

import (
	"net/url"
	"strings"

	"encoding/json"

	"github.com/agentreach/reach/internal/budget"
)

// Delegation describes a hand-off of a sub-task to another agent (C6):
// what the runtime's Delegate is given (reach.Delegation).
type Delegation struct {
	Agent string // the receiving agent
	// Endpoint is where the receiving agent is reached (an A2A agent's
	// base URL), if known: agents named differently at one endpoint (its
	// spelling aside: NormEndpoint) are one agent to the graph check, so a
	// second name does not hide a re-entry or a cycle.
	Endpoint string
	Task     string // the sub-task
	ID       string // the sub-request's id; if empty, a new one
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

// NormEndpoint is an agent's endpoint (a URL) as the graph check compares
// it: its scheme and host in lower case, without the scheme's default port,
// its path without a trailing slash, without a fragment. A URL that does
// not parse, or names no host, is compared as it is, trimmed; "" stays "".
func NormEndpoint(s string) string {
	s = strings.TrimSpace(s)
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if p := u.Port(); p == "80" && u.Scheme == "http" || p == "443" && u.Scheme == "https" {
		u.Host = u.Hostname()
		if strings.Contains(u.Host, ":") {
			u.Host = "[" + u.Host + "]"
		}
	}
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), ""
	u.Fragment, u.RawFragment, u.User = "", "", nil
	return u.String()
}
