// Package graph turns a request's frames (and its sub-requests') into the
// nodes the call-graph renderers draw.
package graph

import (
	"encoding/json"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/callgraph"
)

// Nodes returns the frames of r and of every sub-request, each request's
// in creation order, as renderable nodes.
func Nodes(r *reach.Request) []callgraph.Node {
	var out []callgraph.Node
	var walk func(*reach.Request)
	walk = func(q *reach.Request) {
		for _, f := range q.Frames() {
			out = append(out, Node(f))
		}
		for _, c := range q.Children() {
			walk(c)
		}
	}
	walk(r)
	return out
}

// Node converts one frame.
func Node(f *reach.Frame) callgraph.Node {
	n := callgraph.Node{ID: f.ID.String(), Kind: f.Kind.String(), Name: f.Name, Status: f.State().String(), Tokens: f.Tokens()}
	if f.Parent != nil {
		n.Parent = f.Parent.ID.String()
	}
	switch f.Kind {
	case reach.ToolFrame:
		n.Args = string(f.ShownArgs())
	case reach.DelegateFrame:
		json.Unmarshal(f.ShownArgs(), &n.Args) // the task
	}
	if e := f.Err(); e != nil {
		n.Error = e.Message
	}
	if end := f.Ended(); !end.IsZero() {
		n.Latency = end.Sub(f.Started).Round(10 * time.Microsecond)
	}
	if c := f.CycleTo(); c != nil {
		n.CycleTo = c.ID.String()
	}
	return n
}

// SVG renders r's graph as SVG.
func SVG(r *reach.Request) []byte { return callgraph.SVG(Nodes(r)) }

// DOT renders r's graph for Graphviz.
func DOT(r *reach.Request) []byte { return callgraph.DOT(Nodes(r)) }
