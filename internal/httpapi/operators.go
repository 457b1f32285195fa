package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/a2a"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/policy/approval"
	"github.com/agentreach/reach/internal/ui"
)

// newUI makes the web UI (and the audit log's reader it shares with GET
// /v1/audit).
func (a *API) newUI() *ui.UI {
	uo := ui.Options{Runtime: a.rt, Stats: a.stats, Approvals: uiApprovals{a.approvals}, DeadLetters: uiDeadLetters{a}, Actor: uiActor, Visible: a.sees, Operator: a.isOperator, OperatorOf: a.operatorOf,
		Tools:  func(r *http.Request) []reach.Tool { return a.tools.Visible(identity(r)) },
		Logger: a.log.With("component", "ui")}
	if a.store != nil {
		a.auditV = newAuditView(a.store, a.audit)
		a.auditV.retention = a.retention
		a.auditV.red = a.redactor
		a.auditV.full = a.isGlobalOperator
		uo.Audit = a.auditV
		uo.Removed = a.uiRemoved
	}
	if a.authn != nil { // the UI signs browsers in itself (uiSignsIn)
		uo.Login = &ui.Login{Header: a.authn.Authenticate, Credential: a.authn.Credential, Valid: a.authn.Valid}
	}
	if a.remote != nil {
		uo.NotHere = a.uiElsewhere
		uo.Elsewhere = func(ctx context.Context, rs []*reach.Request) map[string][]string { return a.elsewhere(ctx, rs...) }
		uo.Shared = a.sharedUsage
		uo.StopElsewhere = func(r *http.Request, id string, mode reach.StopMode, by, reason string) (bool, error) {
			may, hid := a.mayHiding(r)
			found, _, err := a.remote.Stop(r.Context(), id, mode, by, a.redactor.RedactString(reason), may)
			if *hid {
				found, err = false, nil // another tenant's: as one the store does not know
			}
			if err != nil && a.remote.Ended(err) || !found && err == nil {
				return true, nil // over everywhere, or forgotten
			}
			if err != nil && a.remote.NotYours(err) {
				return false, ui.ErrNotYours
			}
			return false, err
		}
	}
	if len(a.shown) > 0 {
		uo.Also = func() []*reach.Request { return a.shown }
	}
	return ui.New(uo)
}

// operatorsOnly serves h to operators (everyone when the gateway
// authenticates nobody) and answers anyone else 403 with why, before h
// reads anything of the request.
func (a *API) operatorsOnly(why string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.operatorOnly(w, r, why) {
			h(w, r)
		}
	}
}

// principalOf names who makes an HTTP request: the authenticated principal,
// or the local user when the gateway authenticates nobody.
func principalOf(r *http.Request) string {
	if id, ok := auth.IdentityFrom(r.Context()); ok {
		return id.Principal
	}
	return link.LocalPrincipal
}

// uiActor is who makes an HTTP request to the UI: the authenticated
// principal and its tenant, or the local user.
func uiActor(r *http.Request) ui.Actor {
	if id, ok := auth.IdentityFrom(r.Context()); ok {
		return ui.Actor{Principal: id.Principal, Tenant: id.Tenant}
	}
	return ui.Actor{Principal: link.LocalPrincipal}
}

func approvalActor(r *http.Request) approval.Actor {
	if id, ok := auth.IdentityFrom(r.Context()); ok {
		return approval.Actor{Principal: id.Principal, Roles: id.Roles, Tenant: id.Tenant}
	}
	return approval.Actor{Principal: link.LocalPrincipal}
}

// uiApprovals shows the approval queue in the UI's inbox. It acts as the
// identity that makes each HTTP request (approvalActor), with the roles and
// tenant it authenticated with, as the API does.
type uiApprovals struct{ q *approval.Queue }

var _ ui.Approvals = uiApprovals{}

func (a uiApprovals) List(r *http.Request) []ui.Approval {
	all := a.q.List("")
	actor := approvalActor(r)
	out := make([]ui.Approval, 0, len(all))
	for _, x := range all {
		if !a.q.CanDecide(&x, actor) {
			continue // another principal's (or tenant's): as in GET /v1/approvals
		}
		v := ui.Approval{ID: x.ID, Tool: x.Tool, Args: string(x.Arguments), Impact: x.Impact(),
			AskedBy: x.Principal, Request: x.Request, Needs: x.Requires, Status: string(x.Status), Expires: x.Expires,
			Operation: x.Operation, Why: x.Why, Agent: x.Agent, Scene: x.Scene, Note: x.Note, Created: x.Created}
		for _, vote := range x.Votes {
			v.Votes = append(v.Votes, ui.Vote{By: vote.By, As: vote.As, Reason: vote.Reason, At: vote.At})
		}
		if d := x.Denial; d != nil {
			v.Denial = &ui.Vote{By: d.By, As: d.As, Reason: d.Reason, At: d.At}
		}
		out = append(out, v)
	}
	return out
}

func (a uiApprovals) Approve(r *http.Request, id, reason string) error {
	_, err := a.q.Approve(id, approvalActor(r), reason)
	return uiDecision(err)
}

func (a uiApprovals) Deny(r *http.Request, id, reason string) error {
	_, err := a.q.Deny(id, approvalActor(r), reason)
	return uiDecision(err)
}

// uiDecision is a decision's error as the UI tells it apart: one the
// store did not take matches ui.ErrNotRecorded.
func uiDecision(err error) error {
	if errors.Is(err, approval.ErrNotRecorded) {
		return fmt.Errorf("%w: %w", ui.ErrNotRecorded, err)
	}
	return err
}

// toolView is a tool in GET /v1/tools.
type toolView struct {
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	Access      reach.Access `json:"access"`
	InputSchema any          `json:"input_schema,omitempty"`
}

// listAgents is GET /v1/agents: each agent's live tasks are the caller's,
// its tenant's for a tenant's operator, everyone's for a global operator
// (another principal's tasks say when they work).
func (a *API) listAgents(w http.ResponseWriter, r *http.Request) {
	out := []a2a.Status{}
	if a.agents != nil {
		out = a.agents.AgentsFor(r.Context(), func(o a2a.Owner) bool {
			if a.operatesOn(r, o.Tenant) {
				return true
			}
			id, ok := auth.IdentityFrom(r.Context())
			return ok && id.Principal == o.Principal && id.Tenant == o.Tenant
		})
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"agents": out})
}

// listTools is GET /v1/tools: the tools the caller may call, at most 50.
func (a *API) listTools(w http.ResponseWriter, r *http.Request) {
	tools := a.tools.Visible(identity(r))
	if len(tools) > 50 {
		tools = tools[:50]
	}
	out := make([]toolView, 0, len(tools))
	for _, t := range tools {
		v := toolView{Name: t.Name, Description: t.Description, Access: t.Access}
		if len(t.InputSchema) > 0 {
			v.InputSchema = json.RawMessage(t.InputSchema)
		}
		out = append(out, v)
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"tools": out})
}

// operatorRole is the role whose principals see and stop the requests of
// others and handle dead letters, when the gateway authenticates: a
// principal of no tenant with it every tenant's (a global operator), a
// principal of a tenant with it its own tenant's (that tenant's operator);
// everyone else sees and stops their own requests only.
const operatorRole = "operator"

// isOperator reports whether the HTTP request r comes from a global
// operator, who sees every tenant's work: any caller when the gateway
// authenticates nobody (it serves loopback only), else a principal of no
// tenant with operatorRole. An operator of a tenant is not one
// (operatorOf): what a tenant's admin gives itself in its own identity
// provider reads its own tenant, not every tenant.
func (a *API) isOperator(r *http.Request) bool { return a.isGlobalOperator(r.Context()) }

// isGlobalOperator is isOperator for the context of the HTTP request.
func (a *API) isGlobalOperator(ctx context.Context) bool {
	if a.authn == nil {
		return true
	}
	id, ok := auth.IdentityFrom(ctx)
	return ok && globalOperator(id)
}

// globalOperator reports whether id is an operator of no tenant: one who
// sees every tenant's requests and figures.
func globalOperator(id *auth.Identity) bool {
	return id.Tenant == "" && id.HasRole(operatorRole)
}

// operatorOf returns the tenant whose operator the HTTP request r comes
// from: a principal of a tenant with operatorRole ("" and false for anyone
// else, a global operator too).
func (a *API) operatorOf(r *http.Request) (string, bool) {
	if a.authn == nil {
		return "", false
	}
	id, ok := auth.IdentityFrom(r.Context())
	if !ok || id.Tenant == "" || !id.HasRole(operatorRole) {
		return "", false
	}
	return id.Tenant, true
}

// operatesOn reports whether the caller of r operates on the work of
// tenant: a global operator on every tenant's, a tenant's operator on its
// own tenant's.
func (a *API) operatesOn(r *http.Request, tenant string) bool {
	if a.isOperator(r) {
		return true
	}
	t, ok := a.operatorOf(r)
	return ok && t == tenant
}

// sees reports whether the HTTP request r may see and stop req: a global
// operator, an operator of the tenant of req's root request, or the owner
// of req's root request (link.CheckOwner).
func (a *API) sees(r *http.Request, req *reach.Request) bool {
	if a.operatesOn(r, req.Root().Tenant()) {
		return true
	}
	id, ok := auth.IdentityFrom(r.Context())
	return ok && link.CheckOwner(id, req) == nil
}

// toolStats is GET /v1/stats: per tool, its calls by outcome, its success
// rate, latency percentiles (p50, p95, in nanoseconds), failures by code
// and refusals by guard, and since when they count (since). With auth, for
// operators: a global operator's figures are of every principal's calls, a
// tenant's operator's of its tenant's requests' calls (since the start, or
// since other tenants' calls made room for them: telemetry.Stats keeps
// the figures of the tenants that called last).
func (a *API) toolStats(w http.ResponseWriter, r *http.Request) {
	if t, ok := a.operatorOf(r); ok {
		out, since := a.stats.TenantSnapshot(t)
		httpjson.Write(w, http.StatusOK, map[string]any{"tools": out, "tenant": t, "since": since.UTC()})
		return
	}
	if !a.operatorOnly(w, r, "Statistics are for operators: they count every principal's calls.") {
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"tools": a.stats.Snapshot(), "since": a.stats.Since().UTC()})
}

// operatorOnly reports whether r is a global operator's; otherwise it
// answers 403 with why (and, to a tenant's operator, that these are of
// every tenant).
func (a *API) operatorOnly(w http.ResponseWriter, r *http.Request, why string) bool {
	if a.isOperator(r) {
		return true
	}
	if t, ok := a.operatorOf(r); ok {
		httpjson.WriteError(w, http.StatusForbidden, "operators_only", why+" They are of every tenant: an operator of tenant "+t+" sees its own tenant's requests, audit events and dead letters.",
			"Ask an operator of no tenant (a key or token without a tenant with the role "+operatorRole+") to look at them.")
		return false
	}
	httpjson.WriteError(w, http.StatusForbidden, "operators_only", why, "Ask a principal with the role "+operatorRole+" to look at them.")
	return false
}

// anyOperatorOnly reports whether r is an operator's, of every tenant or
// of one; otherwise it answers 403 with why.
func (a *API) anyOperatorOnly(w http.ResponseWriter, r *http.Request, why string) bool {
	if _, ok := a.operatorOf(r); ok || a.isOperator(r) {
		return true
	}
	httpjson.WriteError(w, http.StatusForbidden, "operators_only", why, "Ask a principal with the role "+operatorRole+" to look at them.")
	return false
}

// anyOperatorsOnly is operatorsOnly for operators of a tenant too: h
// shows or acts on the caller's tenant only.
func (a *API) anyOperatorsOnly(why string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.anyOperatorOnly(w, r, why) {
			h(w, r)
		}
	}
}
