package policy

import (
	"cmp"
	"fmt"

	"github.com/cedar-policy/cedar-go/types"

	"github.com/agentreach/reach"
)

// Ask is a question about what an upstream offers besides tools: reading
// one of its resources, getting one of its prompts, completing an argument
// of either. It is the Cedar request (principal, Action, resource, context)
// with
//
//   - resource Reach::Resource::"<uri>" or Reach::Prompt::"<name>", a
//     member of Reach::Upstream::"<upstream>", with attributes name (the URI
//     or the prompt's exposed name), upstream, access ("read": it reads
//     what the upstream has) and tags (empty), so that a policy written for
//     tools evaluates without error;
//   - context {arguments: {}, scene: "", request_id: "", agent: "",
//     depth: 0, tenant: the principal's}, for the same reason.
//
// Nothing is permitted unless a permit applies, a forbid wins, and any
// evaluation error denies, as for a tool call. A permit's @approval cannot
// be waited for here: such a decision is [reach.NeedsApproval], which
// callers refuse.
type Ask struct {
	Action   types.EntityUID // ReadResourceAction, GetPromptAction or CompleteAction
	Type     types.EntityType
	Name     string // a resource's URI (or URI template), a prompt's exposed name
	Upstream string // the name of the upstream that has it
}

func itemKey(typ, name string) string { return typ + "\x00" + name }

func (a *Ask) entity() types.Entity {
	var parents types.EntityUIDSet
	if a.Upstream != "" {
		parents = types.NewEntityUIDSet(types.NewEntityUID(UpstreamType, types.String(a.Upstream)))
	}
	return types.Entity{
		UID:     types.NewEntityUID(a.Type, types.String(a.Name)),
		Parents: parents,
		Attributes: types.NewRecord(types.RecordMap{
			"name":     types.String(a.Name),
			"access":   types.String(reach.Read),
			"upstream": types.String(a.Upstream),
			"tags":     types.NewSet(),
		}),
	}
}

// Ask answers an Ask for the principal under the set. A resource's URI is
// asked about by its path as an upstream reads it (resourceView): "." and
// ".." segments, doubled slashes and escaped dots cleaned, as in a tool
// call's path arguments, so that a forbid of file:///private/key holds
// against file:///public/../private/key. The upstream is sent the URI as
// it was.
func (s *Set) Ask(p Principal, a Ask) Result {
	if a.Type != ResourceType {
		return s.ask(p, a)
	}
	raw := a.Name
	a.Name = resourceView(raw)
	r := s.ask(p, a)
	if r.Decision == reach.Deny {
		return r
	}
	// A forbid holds against the URI's other reading too (resourceReading):
	// the one an upstream that reads it most loosely reads. A permit is
	// asked of the URI as written, so that one of a URI with a query
	// (db://q?table=public) still permits it alone.
	if other := resourceReading(raw); other != "" && other != a.Name {
		b := a
		b.Name = other
		if o := s.ask(p, b); o.Decision == reach.Deny && (len(o.Policies) > 0 || o.Reason != "" || len(o.Errors) > 0) {
			return o
		}
	}
	return r
}

// ask answers a for p, a.Name as the policies see it.
func (s *Set) ask(p Principal, a Ask) Result {
	pe, re := p.entity(), a.entity()
	pol := applicable{s.byItem[itemKey(string(a.Type), a.Name)], s.byUpstream[a.Upstream], s.all}
	dec, diag := s.decideAction(&pol, &pe, &re, a.Action, contextRecord(emptyRecord, "", "", "", p.Tenant, 0))
	return s.result(dec, diag)
}

// Ask answers an Ask for the principal under the policies in force.
func (e *Engine) Ask(p Principal, a Ask) Result { return e.set.Load().Ask(p, a) }

// Allows reports whether the policies in force permit the principal a,
// without approval: what a listing of resources or prompts shows.
func (e *Engine) Allows(p Principal, a Ask) bool { return e.Ask(p, a).Decision == reach.Permit }

// Refusal is what a client is told when an Ask is not permitted: what was
// refused, why, and what would allow it. A permit added does only when no
// policy permitted it: a forbid wins over any permit, an error denies
// whatever else applies, and the strictest permit that applies decides
// (so one more does not lift an @approval).
func Refusal(p Principal, a Ask, r Result) string {
	what := fmt.Sprintf("%s %s %q of upstream %q", a.Action.ID, a.Type, a.Name, a.Upstream)
	var why, allow string
	switch {
	case len(r.Errors) > 0:
		why = "a policy failed to evaluate (" + r.Errors[0] + "), and an error denies"
		allow = "To allow it, fix that policy (a permit added does not help while it fails)"
	case r.Decision == reach.NeedsApproval:
		why = "the permit that applies asks for approval, which is given for tool calls only"
		allow = "To allow it, permit it without @approval: change that permit, or narrow it so that it does not apply here (another permit does not help: the strictest that applies decides)"
	case r.Reason != "" || len(r.Policies) > 0:
		why = cmp.Or(r.Reason, "a policy forbids it")
		allow = "A forbid wins over any permit: only a change to that forbid allows it"
	default:
		why = "no policy permits it"
		allow = fmt.Sprintf(`To allow it, add a policy such as: permit (principal == %s::%q, action == %s::%q, resource in %s::%q);`,
			PrincipalType, p.ID, ActionType, a.Action.ID, UpstreamType, a.Upstream)
	}
	return fmt.Sprintf("reach refused to %s for principal %q: %s. %s", what, p.ID, why, allow)
}
