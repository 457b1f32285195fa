package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/policy/pin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool pinning (P7): the first definition seen of an upstream tool (title,
// description, schemas, annotations) is pinned in the data folder's
// pins.json; a later, different definition is held, the tool neither listed
// nor callable, until `reach tools approve NAME` pins it. The gateway looks
// at the held tools again every pinRecheck, so an approval applies within
// seconds without a restart.

var pinRecheck = 2 * time.Second

// openPins opens the pin store when there are upstream tools to pin and a
// data folder to keep it in: a configuration loaded from a file, or one
// naming its data folder (a Config built in memory without one, as in
// tests and benchmarks, pins nothing).
func (g *Gateway) openPins() error {
	if len(g.upstreams) == 0 || g.opts.Ephemeral || (g.cfg.Data == "" && g.cfg.dir == "") {
		return nil
	}
	dir, err := g.cfg.EnsureDataDir()
	if err != nil {
		return err
	}
	ps, err := pin.Open(pin.Path(dir))
	if err != nil {
		return err
	}
	g.pins = ps
	g.background(func() { g.recheckPins(pinRecheck) })
	return nil
}

// upstreamOf returns the upstream serving an exposed tool name.
func (g *Gateway) upstreamOf(t reach.Tool) *upstream {
	for _, tag := range t.Tags {
		if name, ok := strings.CutPrefix(tag, "upstream:"); ok {
			for _, u := range g.upstreams {
				if u.cfg.Name == name {
					return u
				}
			}
		}
	}
	return nil
}

func pinDefinition(t *mcp.Tool) pin.Definition {
	d := pin.Definition{Title: t.Title, Description: t.Description}
	if t.InputSchema != nil {
		d.InputSchema, _ = json.Marshal(t.InputSchema)
	}
	if t.OutputSchema != nil {
		d.OutputSchema, _ = json.Marshal(t.OutputSchema)
	}
	if t.Annotations != nil {
		d.Annotations, _ = json.Marshal(t.Annotations)
	}
	return d
}

// pinned returns the tools whose definitions are pinned (new or unchanged),
// marking the others held; tools not from upstreams pass.
func (g *Gateway) pinned(tools []reach.Tool) []reach.Tool {
	if g.pins == nil {
		return tools
	}
	return slices.DeleteFunc(tools, func(t reach.Tool) bool {
		u := g.upstreamOf(t)
		if u == nil {
			return false
		}
		orig := u.original(t.Name)
		if orig == nil {
			return false
		}
		st, err := g.pins.Check(t.Name, pinDefinition(orig))
		if err != nil {
			g.log.Warn("checking a tool's pin failed; the tool is held", "tool", t.Name, "err", err)
		}
		if st == pin.Held {
			if _, was := g.heldTools.Swap(t.Name, struct{}{}); !was {
				g.log.Warn("an upstream tool's definition changed: it is held until approved (reach tools diff/approve)", "tool", t.Name)
			}
			return true
		}
		g.heldTools.Delete(t.Name)
		return false
	})
}

// recheckPins registers held tools once their change is approved.
func (g *Gateway) recheckPins(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		if !g.anyHeld() {
			continue
		}
		var back []reach.Tool
		for _, u := range g.upstreams {
			for _, tool := range u.tools() {
				if !g.held(tool.Name) {
					continue
				}
				if ok := g.pinned([]reach.Tool{tool}); len(ok) == 1 {
					back = append(back, g.prepare(tool))
				}
			}
		}
		if len(back) == 0 {
			continue
		}
		if err := g.rt.Replace(back...); err != nil {
			g.log.Warn("registering approved tools failed", "err", err)
			continue
		}
		g.syncMCPTools()
		for _, tool := range back {
			g.log.Info("an approved tool definition is in force", "tool", tool.Name)
		}
	}
}

// missingTool explains a call of a tool that is not registered because its
// changed definition is held (reach.Options.Missing): the caller learns it
// is held, not that it does not exist, and who can let it through.
func (g *Gateway) missingTool(name string) *reach.Error {
	if e := g.unreachedTool(name); e != nil {
		return e
	}
	if !g.held(name) {
		return nil
	}
	return &reach.Error{Type: reach.TypeNotFound, Code: "tool_held",
		Message:    fmt.Sprintf("Tool %s is held: its definition changed upstream since it was approved, and it is not called until an operator reviews the change.", name),
		Suggestion: fmt.Sprintf("Use another tool for now. An operator lets it through with `reach tools diff %s`, then `reach tools approve %s`.", name, name)}
}

// unreachedTool explains a name with the prefix of an upstream that has not
// been reached since the gateway started: its tools are not known yet.
func (g *Gateway) unreachedTool(name string) *reach.Error {
	for _, u := range g.upstreams {
		p := u.prefix()
		if p == "" || !strings.HasPrefix(name, p) {
			continue
		}
		never, err := u.neverListed()
		if !never {
			continue
		}
		why := ""
		if err != nil {
			why = " (" + g.redactor.RedactString(err.Error()) + ")"
		}
		return &reach.Error{Type: reach.TypeTransient, Code: "upstream_unavailable",
			Message: fmt.Sprintf("Tool %s would come from upstream %s, which has not been reachable since the gateway started%s; "+
				"the gateway dials it again in the background.", name, u.cfg.Name, why),
			Suggestion: "Try again in a minute, or do without this tool."}
	}
	return nil
}
