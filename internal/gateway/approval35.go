package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/store/postgres"
)

// approvalAudited implements approval.Options.Audited: whether the audit
// log holds the event of each of es, approvals' actions audited again at
// a restart or by a survivor (approval.Event.Again), already: a kill came
// after its event was appended and before its mark was cleared
// (approval.audited). Each request's log is read once, for all of its
// actions in es. An event is found among its request's by its approval,
// action and requirement, as auditApproval writes them.
func (g *Gateway) approvalAudited(ctx context.Context, es []approval.Event) []bool {
	held := make([]bool, len(es))
	if g.audit == nil {
		return held
	}
	logs := map[string]map[string]bool{} // request -> the heads and actions of its approval events
	for i := range es {
		e := &es[i]
		a := &e.Approval
		found, read := logs[a.Request]
		if !read {
			evs, err := g.audit.Show(ctx, a.Request)
			if err != nil {
				g.log.Warn("approvals: reading the audit log for an action audited again; it is audited (again, if the log holds it)",
					"approval", a.ID, "action", e.Action, "err", err)
				continue // read again for the request's next action
			}
			found = map[string]bool{}
			for _, ev := range evs {
				if ev.Kind == "approval" {
					found[ev.Decision+"\x00"+approvalEventHead(ev.Message)] = true
				}
			}
			logs[a.Request] = found
		}
		held[i] = found[e.Action+"\x00"+approvalHead(a)]
	}
	return held
}

// approvalEventHead is the head of an approval event's message
// (approvalHead, whose id and requirement hold no parenthesis): up to its
// first ")", followed by its end, " by " or ": ".
func approvalEventHead(msg string) string {
	i := strings.IndexByte(msg, ')')
	if i < 0 {
		return ""
	}
	if rest := msg[i+1:]; rest != "" && rest[0] != ' ' && rest[0] != ':' {
		return ""
	}
	return msg[:i+1]
}

// lives is the store of several instances, which knows their lives.
type lives interface {
	Lives(ctx context.Context, ttl time.Duration) ([]postgres.Life, error)
}

// adoptApprovals audits, on several instances, the approval actions a
// dead instance stored and did not audit, when one that never starts
// again under its name leaves them (approval.Queue.Adopt): those whose
// mark names an instance with no live life, listed dead or forgotten.
// Asked at each recovery (each death, and the cluster's sweep now and
// then), not only while the store lists a dead life: the recovery
// forgets the life, and an adoption that failed, or a mark written
// after, is taken by the next.
func (g *Gateway) adoptApprovals(ctx context.Context) {
	st, ok := g.store.(lives)
	if !ok || g.cluster == nil || g.approvals == nil {
		return
	}
	ls, err := st.Lives(ctx, g.cluster.TTL())
	if err != nil {
		g.log.Warn("approvals: listing the instances to adopt a dead one's actions", "err", err)
		return
	}
	alive := map[string]bool{}
	for _, l := range ls {
		if l.Alive {
			alive[l.Name] = true
		}
	}
	if err := g.approvals.Adopt(ctx, func(name string) bool { return alive[name] }); err != nil {
		g.log.Warn("approvals: adopting a dead instance's unaudited actions", "err", err)
	}
}
