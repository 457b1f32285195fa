package reach

import (
	"encoding/json"
	"fmt"

	"github.com/agentreach/reach/internal/callgraph"
)

// agentContract is a Delegation's receiving agent as the graph check sees
// it: its contract and the hashes its delegate frames carry in the stack's
// filter.
type agentContract struct {
	name     string
	re       Reentrancy
	key      []string
	on       Mode
	meta     []byte // the normalized metadata, for a keyed agent
	nameHash callgraph.Hash
}

// agentSalt keeps an agent's hashes apart from a tool's of the same name
// in the filter they share (the walk compares kinds anyway).
const agentSalt = "\x00agent\x00"

func compileAgent(d *Delegation) (*agentContract, error) {
	a := &agentContract{name: d.Agent, re: d.Reentrancy, key: d.Key, on: d.OnViolation}
	if err := callgraph.CheckContract("delegate to "+d.Agent, &a.re, &a.on, len(a.key) > 0,
		"a keyed agent needs the metadata fields that key it (Delegation.Key)"); err != nil {
		return nil, err
	}
	if a.re == Keyed {
		m, err := callgraph.AgentMeta(d.Agent, d.Metadata)
		if err != nil {
			return nil, err
		}
		a.meta = m
	}
	a.nameHash = callgraph.HashString(agentSalt + a.name).Sep().Sep()
	return a, nil
}

// leavesReentry reports whether the agent's contract leaves a re-entry to
// the defaults (non_reentrant, refused): then the loop guard may judge the
// delegation stack too.
func (a *agentContract) leavesReentry() bool { return a.re == NonReentrant && a.on == Refuse }

// hashes sets the delegate frame's hashes: the agent with its normalized
// task (a cycle), and the agent with its key values (a keyed agent).
func (a *agentContract) hashes(f *Frame) {
	f.hash = callgraph.HashString(agentSalt + a.name).Sep().AddString(callgraph.NormTask(taskOf(f)))
	if a.re == Keyed {
		f.meta = a.meta
		f.keyed = callgraph.KeyHash(callgraph.HashString(agentSalt+a.name).Sep(), a.key, a.meta)
	}
}

// checkStack is the graph check of a hand-off (G2, G3): the delegate frames
// above f, and the agent of the request at the top of the tree. It walks
// only when the stack's filter says a match is possible. In warn mode the
// violation is noted on the frame and the hand-off goes on.
func (a *agentContract) checkStack(f *Frame) *Error {
	if a.on == Allow {
		return nil
	}
	hit, e := a.walk(f)
	if e == nil {
		return nil
	}
	f.mu.Lock()
	f.cycleTo = hit
	if a.on == Warn {
		f.warn = append(f.warn, f.Request.rt.opts.Redactor.RedactString("warning: "+e.Message))
		e = nil
	}
	f.mu.Unlock()
	return e
}

func (a *agentContract) walk(f *Frame) (*Frame, *Error) {
	if p := f.Parent; p != nil && (p.filter.MayHave(a.nameHash) || p.filter.MayHave(f.hash)) {
		task := callgraph.NormTask(taskOf(f))
		for d := p; d != nil; d = d.Parent {
			if d.Kind != DelegateFrame || d.Name != a.name || d.State() == Refused {
				continue
			}
			if callgraph.NormTask(taskOf(d)) == task {
				return d, callgraph.AgentCycleError(f.Name, preview(f.Args, 120), agentOrMain(loopAgent(d.Request)))
			}
			switch a.re {
			case NonReentrant:
				return d, callgraph.AgentReentryError(f.Name, onStack(d))
			case Keyed:
				if callgraph.SameKey(a.key, a.meta, d.meta) {
					return d, callgraph.AgentKeyedError(f.Name, a.key, a.meta, onStack(d))
				}
			}
		}
	}
	// The agent at the top of the tree is on the stack too: it made the
	// request, and no delegate frame stands for it.
	if root := f.Request.root; root.agent == a.name && a.re == NonReentrant {
		return nil, callgraph.AgentReentryError(f.Name, onStack(nil))
	}
	return nil, nil
}

// taskOf is the task a delegate frame hands over.
func taskOf(f *Frame) string {
	var s string
	if json.Unmarshal(f.Args, &s) != nil {
		return string(f.Args)
	}
	return s
}

// onStack says where an agent is on the stack: the delegate frame that
// handed it its task, or the top of the request.
func onStack(d *Frame) string {
	if d == nil {
		return "it made the request this hand-off belongs to"
	}
	return fmt.Sprintf("it is working on %s, handed to it by the %s agent", preview(d.Args, 120), agentOrMain(loopAgent(d.Request)))
}
