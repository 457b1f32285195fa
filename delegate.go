package reach

import "github.com/agentreach/reach/internal/callgraph"

// node is f as the graph checks read it (callgraph.Stack).
func node(f *Frame) callgraph.Node[*Frame] {
	return callgraph.Node[*Frame]{Up: f.Parent, Kind: f.Kind, Name: f.Name, Agent: f.Agent, Args: f.Args, Depth: f.Depth,
		Live: f.State() != Refused, Mark: &f.mark, Handed: agentOrMain(loopAgent(f.Request))}
}

// checkAgent is the graph check of the hand-off f to a (G2, G3;
// callgraph.CheckAgent). In warn mode the violation is noted on the frame
// and the hand-off goes on.
func (rt *Runtime) checkAgent(f *Frame, a *callgraph.Agent) *Error {
	if a.On == Allow {
		return nil
	}
	hit, e := callgraph.CheckAgent(node, f, a, f.Request.root.agent)
	if e == nil {
		return nil
	}
	f.mu.Lock()
	f.cycleTo = hit
	if a.On == Warn {
		f.warn = append(f.warn, rt.opts.Redactor.RedactString("warning: "+e.Message))
		e = nil
	}
	f.mu.Unlock()
	return e
}
