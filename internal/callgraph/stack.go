package callgraph

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentreach/reach/internal/fault"
	"github.com/agentreach/reach/internal/frames"
)

// Mark is what the graph check keeps on a frame: the hashes of its call
// and the filter of its stack, so that a call's check costs two bit tests
// unless one of its hashes may be on the stack.
type Mark struct {
	Hash  Hash // the tool and its canonical arguments; a hand-off: the agent and its normalized task
	Keyed Hash // a keyed tool and its key's values; a keyed agent's hand-off: the agent and its metadata's
	// Filter holds the hashes of every frame on the stack, this one
	// included once Seal is called.
	Filter Filter
	// Adopted marks a frame of another runtime's stack: it has its
	// hashes, not its arguments.
	Adopted bool
	Meta    []byte // a keyed agent's hand-off: the normalized metadata
	// Endpoint is a hand-off's: the hash of where its agent is reached
	// (Delegation.Endpoint, normalized), 0 if not known.
	Endpoint Hash
}

// Tool sets the hashes of a call of the tool name with canonical args.
func (m *Mark) Tool(name string, args []byte, re Reentrancy, key []string) {
	m.Hash = HashString(name).Sep().Add(args)
	if re == Keyed {
		m.Keyed = KeyHash(HashString(name).Sep(), key, args)
	}
}

// Seal adds the frame's own hashes, with the hash of what it calls
// (a tool's or an agent's name: NameHash), to its stack's filter.
func (m *Mark) Seal(nameHash Hash) {
	m.Filter.Add(m.Hash)
	m.Filter.Add(nameHash)
	if m.Keyed != 0 {
		m.Filter.Add(m.Keyed)
	}
	if m.Endpoint != 0 {
		m.Filter.Add(m.Endpoint)
	}
}

// NameHash is the hash of a tool's name in a stack's filter.
func NameHash(tool string) Hash { return HashString(tool).Sep().Sep() }

// Node is a frame on a stack as the graph checks read it. The runtime's
// frames are not known here: a Stack reads their Nodes.
type Node[F comparable] struct {
	Up    F // the parent frame; the zero F at the top
	Kind  frames.Kind
	Name  string // the tool, or the receiving agent
	Agent string // the agent that made the call
	Args  []byte // canonical arguments; a hand-off: its task as a JSON string
	Depth int
	Live  bool  // not refused
	Mark  *Mark // the frame's own
	// Handed is, for a hand-off, the agent that handed the task over
	// (its request's, "main" at the top).
	Handed string
}

// Stack reads a frame's Node.
type Stack[F comparable] func(F) Node[F]

// CheckTool is the graph check of a call of a tool (f, under its parent)
// with the contract re and key, whose name hashes to nameHash (G2): a
// re-entry its contract forbids, or a cycle (an ancestor making the same
// call). It walks the ancestors only when the stack's filter says a match
// is possible, and returns the ancestor re-entered, with the refusal.
func CheckTool[F comparable](s Stack[F], f F, re Reentrancy, key []string, nameHash Hash) (F, *fault.Error) {
	var none F
	n := s(f)
	if n.Up == none {
		return none, nil
	}
	filter := &s(n.Up).Mark.Filter
	switch re {
	case NonReentrant:
		if filter.MayHave(nameHash) {
			for a := n.Up; a != none; a = s(a).Up {
				if an := s(a); an.Kind == frames.Tool && an.Name == n.Name && an.Live {
					return a, ReentryError(n.Name, an.Depth, calledBy(s, a))
				}
			}
		}
	case Keyed:
		if filter.MayHave(n.Mark.Keyed) {
			for a := n.Up; a != none; a = s(a).Up {
				if an := s(a); an.Kind == frames.Tool && an.Mark.Keyed == n.Mark.Keyed && an.Name == n.Name && an.Live && (an.Mark.Adopted || SameKey(key, an.Args, n.Args)) {
					return a, KeyedError(n.Name, key, n.Args, an.Depth, calledBy(s, a))
				}
			}
		}
	}
	if filter.MayHave(n.Mark.Hash) {
		for a := n.Up; a != none; a = s(a).Up {
			if an := s(a); an.Kind == frames.Tool && an.Mark.Hash == n.Mark.Hash && an.Name == n.Name && an.Live && (an.Mark.Adopted || bytes.Equal(an.Args, n.Args)) {
				return a, CycleError(n.Name, Preview(n.Args, 120), an.Depth, calledBy(s, a))
			}
		}
	}
	return none, nil
}

// calledBy names what called frame a: the nearest tool call above it, or
// the agent.
func calledBy[F comparable](s Stack[F], a F) string {
	var none F
	n := s(a)
	for p := n.Up; p != none; p = s(p).Up {
		if pn := s(p); pn.Kind == frames.Tool {
			return pn.Name
		}
	}
	return "the " + n.Agent + " agent"
}

// Agent is a hand-off's receiving agent as the graph check sees it: its
// contract (G2, G3) and the hashes its delegate frames carry in the
// stack's filter.
type Agent struct {
	Name     string
	On       Mode // what a violation does
	NameHash Hash // the agent's name in a stack's filter
	// Endpoint is the hash of where the agent is reached, normalized
	// (NormEndpoint), in a stack's filter too; 0 if not known.
	Endpoint Hash
	re       Reentrancy
	key      []string
	meta     []byte // the normalized metadata, for a keyed agent
}

// agentSalt keeps an agent's hashes apart from a tool's of the same name
// in the filter they share (the walk compares kinds anyway).
const agentSalt = "\x00agent\x00"

// CompileAgent checks the contract of the hand-off d to its agent: its
// Reentrancy and OnViolation (empty: non_reentrant, refuse), the metadata
// fields that key a keyed agent, and its metadata (a JSON object).
func CompileAgent(d *Delegation) (*Agent, error) {
	a := &Agent{Name: d.Agent, re: d.Reentrancy, key: d.Key, On: d.OnViolation}
	if err := CheckContract("delegate to "+d.Agent, &a.re, &a.On, len(a.key) > 0,
		"a keyed agent needs the metadata fields that key it (Delegation.Key)"); err != nil {
		return nil, err
	}
	if a.re == Keyed {
		m, err := AgentMeta(d.Agent, d.Metadata)
		if err != nil {
			return nil, err
		}
		a.meta = m
	}
	a.NameHash = HashString(agentSalt + a.Name).Sep().Sep()
	if ep := NormEndpoint(d.Endpoint); ep != "" {
		a.Endpoint = HashString(agentSalt + "endpoint\x00" + ep).Sep().Sep()
	}
	return a, nil
}

// LeavesReentry reports whether the agent's contract leaves a re-entry to
// the defaults (non_reentrant, refused): then the loop guard may judge the
// delegation stack too.
func (a *Agent) LeavesReentry() bool { return a.re == NonReentrant && a.On == Refuse }

// Mark sets the hashes of a hand-off of task to the agent: the agent with
// its normalized task (a cycle), and with its key's values (a keyed agent).
func (a *Agent) Mark(m *Mark, task string) {
	m.Hash = HashString(agentSalt + a.Name).Sep().AddString(NormTask(task))
	m.Endpoint = a.Endpoint
	if a.re == Keyed {
		m.Meta = a.meta
		m.Keyed = KeyHash(HashString(agentSalt+a.Name).Sep(), a.key, a.meta)
	}
}

// CheckAgent is the graph check of a hand-off f to a (G2): the delegate
// frames above f, and rootAgent, the agent of the request at the top of
// the tree, which is on the stack too. It walks only when the stack's
// filter says a match is possible, and returns the delegate frame
// re-entered (none for the top's agent), with the refusal.
func CheckAgent[F comparable](s Stack[F], f F, a *Agent, rootAgent string) (F, *fault.Error) {
	var none F
	n := s(f)
	if p := n.Up; p != none && (s(p).Mark.Filter.MayHave(a.NameHash) || s(p).Mark.Filter.MayHave(n.Mark.Hash) ||
		a.Endpoint != 0 && s(p).Mark.Filter.MayHave(a.Endpoint)) {
		task := NormTask(Task(n.Args))
		for d := p; d != none; d = s(d).Up {
			dn := s(d)
			if dn.Kind != frames.Delegate || !dn.Live || dn.Name != a.Name && (a.Endpoint == 0 || dn.Mark.Endpoint != a.Endpoint) {
				continue
			}
			// A frame of another runtime's stack (adopted) has the hashes
			// of its task and key, not them.
			if dn.Mark.Adopted && dn.Mark.Hash == n.Mark.Hash || !dn.Mark.Adopted && NormTask(Task(dn.Args)) == task {
				return d, AgentCycleError(n.Name, Preview(n.Args, 120), dn.Handed)
			}
			switch a.re {
			case NonReentrant:
				return d, AgentReentryError(n.Name, onStack(&dn))
			case Keyed:
				if dn.Mark.Adopted && dn.Mark.Keyed == n.Mark.Keyed || !dn.Mark.Adopted && SameKey(a.key, a.meta, dn.Mark.Meta) {
					return d, AgentKeyedError(n.Name, a.key, a.meta, onStack(&dn))
				}
			}
		}
	}
	if rootAgent == a.Name && a.re == NonReentrant {
		return none, AgentReentryError(n.Name, onStack[F](nil))
	}
	return none, nil
}

// Task is the task a hand-off's arguments (a JSON string) hand over.
func Task(args []byte) string {
	var s string
	if json.Unmarshal(args, &s) != nil {
		return string(args)
	}
	return s
}

// onStack says where an agent is on the stack: the delegate frame d that
// handed it its task, or (nil) the top of the request.
func onStack[F comparable](d *Node[F]) string {
	if d == nil {
		return "it made the request this hand-off belongs to"
	}
	if len(d.Args) == 0 { // another runtime's frame: its task is not known here
		return fmt.Sprintf("it is working on a task handed to it by the %s agent", d.Handed)
	}
	return fmt.Sprintf("it is working on %s, handed to it by the %s agent", Preview(d.Args, 120), d.Handed)
}

// Preview renders JSON for a message, cut to n bytes.
func Preview(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
