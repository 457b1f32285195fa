package modelproxy

import (
	"context"
	"strings"
	"unicode"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/link"
)

// handOff returns the sub-request the sub-agent handed its task by h runs
// in, and the frame its turns go under: begun (once for h) as a delegation under h's turn, its budget carved
// from what the turn's request has left (Options.SubagentBudget, else all
// of it), so that the sub-agent's turns and tool calls count against both,
// a stop of the turn's request stops it, and its own budget spent refuses
// its turns (402) while the manager goes on. The sub-request is owned with
// its root: it ends when the turn that handed it its task goes on
// (link.Owned.EndSubs), or with the root. done lets go of the root's hold
// taken to begin it; call it once the turn is placed. Without a Delegator
// the sub-agent's turns nest under h's turn in its request, as before.
//
// held says the caller holds the turn's request already (the turn of
// another instance adopted here: handedElsewhere).
func (p *Proxy) handOff(ctx context.Context, h *link.Handoff, task string, held bool) (request string, parent reach.FrameID, done func(), _ error) {
	turn := h.Turn
	// Hold the turn's request while the hand-off begins: its idle gap
	// does not end it meanwhile, and a request of another owner is
	// refused (Handed only finds who's).
	done = func() {}
	if !held {
		var err error
		if _, _, done, err = p.opts.Owned.CallContext(ctx, link.Target{Request: turn.Request.ID(), Parent: turn.ID}, nil); err != nil {
			return "", 0, nil, err
		}
	}
	if p.opts.Delegator == nil {
		return turn.Request.ID(), turn.ID, done, nil
	}
	sub, err := h.Sub(func() (*reach.Request, error) {
		// The sub-request's context is its parent request's, not this
		// turn's: it outlives the HTTP exchange that began it.
		_, sub, err := p.opts.Delegator.Delegate(reach.WithParent(turn.Request.Context(), turn), &reach.Delegation{
			Agent: subagentName(h.Tool), Task: p.maskText(task), Budget: p.opts.SubagentBudget})
		if err != nil {
			return nil, err
		}
		p.opts.Owned.AddSub(sub)
		return sub, nil
	})
	if err != nil {
		done()
		return "", 0, nil, err
	}
	return sub.ID(), sub.DelegateFrame().ID, done, nil
}

// subagentName is the agent name a sub-agent's delegate frame goes by: the
// function its manager's model called, as the model named it when that is
// a plain name (OpenAI-style: letters, digits, '_', '-', '.', ':', up to
// 64), else "sub-agent". A model's text is not trusted in views.
func subagentName(tool string) string {
	if tool == "" || len(tool) > 64 || strings.ContainsFunc(tool, func(r rune) bool {
		return r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-.:", r))
	}) {
		return "sub-agent"
	}
	return tool
}
