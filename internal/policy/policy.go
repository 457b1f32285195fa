// Package policy authorizes tool calls with Cedar policies (P2, P3): default
// deny, access levels, roles, rules over arguments and scenes, and approvals
// expressed as annotations on permits.
//
//	eng := policy.New(&policy.Options{Tools: rt.Tools}) // the shipped default policies
//	rt := reach.New(&reach.Options{Authorizer: eng, Approver: queue.Approver(), ApprovalKey: queue.ApprovalKey})
//	w, err := policy.NewWatcher(eng, "policies/", nil) // hot reload (P5)
//	go w.Run(ctx)
//
// # What a policy sees
//
// Every call is the Cedar request (principal, Reach::Action::"call",
// resource, context) with
//
//   - principal Reach::Principal::"<id>", a member of Reach::Role::"<role>"
//     for each role and of Reach::Tenant::"<tenant>" for its tenant, if it
//     has one, with attributes id, authenticated (false for an empty or
//     "anonymous" principal), roles (a set), tenant ("" for none), and each
//     of the request's attributes (strings, e.g. department); the id is
//     not the tenant's: Reach::Principal::"alice" is alice of every tenant;
//   - resource Reach::Tool::"<name>", a member of Reach::Upstream::"<up>"
//     for the upstream its tag upstream:<up> names (ToolUpstream), or,
//     untagged, when the name is "<up>__<tool>", with attributes name,
//     access, upstream ("" for a local tool) and tags (a set);
//   - context {arguments, scene, request_id, agent, depth, tenant}: arguments
//     is the call's canonical JSON converted as [Arguments] describes, tenant
//     the request's (its principal's).
//
// An upstream's resources, prompts and completions are asked as an [Ask]:
// actions read_resource, get_prompt and complete on Reach::Resource and
// Reach::Prompt entities, answered by [Engine.Ask] under the same rules.
//
// The shipped policies ([DefaultSource], written out by [WriteDefault])
// permit reads to authenticated principals, writes with the user's
// approval, high-risk calls with the user's and a reviewer's, and nothing
// forbidden; they show an argument rule and a scene rule as comments.
//
// # Decisions
//
// Nothing is permitted unless a permit applies, and a forbid wins. Any
// evaluation error denies: Cedar skips a policy whose condition errors,
// which would let a broken forbid open a hole, so here one error anywhere
// among the policies that apply to the tool denies the call. A permit
// annotated @approval("user") or @approval("user+reviewer") makes the
// decision [reach.NeedsApproval]; when several permits apply the strictest
// approval wins. A denial is a *reach.Error that says why (the @reason of
// the forbid that decided) and names tools with similar tags or names that
// the same policies could permit ([Engine.Visible]).
//
// # Speed
//
// Policies are indexed by their resource scope: a policy scoped to one tool
// (resource == Reach::Tool::"x") is evaluated only for that tool, one scoped
// to an upstream (resource in Reach::Upstream::"u") only for its tools, and
// one whose scope can never match (another entity type or action) never. A
// decision with hundreds of per-tool policies takes microseconds.
package policy

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/names"
)

// Approvals a permit may require, as written in @approval("...").
const (
	ApprovalUser         = "user"          // the user who made the request
	ApprovalUserReviewer = "user+reviewer" // the user and a different principal with the role "reviewer"
)

// Entity types.
const (
	PrincipalType = "Reach::Principal"
	RoleType      = "Reach::Role"
	// TenantType is a tenant: a principal of a tenant is a member of it
	// (principal in Reach::Tenant::"acme"), as of each of its roles.
	TenantType   = "Reach::Tenant"
	ToolType     = "Reach::Tool"
	UpstreamType = "Reach::Upstream"
	ActionType   = "Reach::Action"
	// ResourceType is an upstream's resource, by URI; PromptType an
	// upstream's prompt, by the name the gateway exposes it under.
	ResourceType = "Reach::Resource"
	PromptType   = "Reach::Prompt"
)

// CallAction is the action of every tool call.
var CallAction = types.NewEntityUID(ActionType, "call")

// The actions on what upstreams offer besides tools: reading a resource
// (resources/read, and resources/subscribe, which reads its updates),
// getting a prompt (prompts/get), and completing an argument of a prompt or
// resource template (completion/complete).
var (
	ReadResourceAction = types.NewEntityUID(ActionType, "read_resource")
	GetPromptAction    = types.NewEntityUID(ActionType, "get_prompt")
	CompleteAction     = types.NewEntityUID(ActionType, "complete")
)

var actions = []types.EntityUID{CallAction, ReadResourceAction, GetPromptAction, CompleteAction}

//go:embed default.cedar
var defaultSource []byte

// DefaultSource returns the text of the shipped default policies.
func DefaultSource() []byte { return bytes.Clone(defaultSource) }

// WriteDefault writes the shipped default policies to path for users to copy
// and edit. It does not overwrite an existing file.
func WriteDefault(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("writing the default policies: %w", err)
	}
	if _, err := f.Write(defaultSource); err != nil {
		f.Close()
		return fmt.Errorf("writing the default policies: %w", err)
	}
	return f.Close()
}

var defaultSet = sync.OnceValue(func() *Set {
	s, err := Parse(Source{Name: "default.cedar", Text: defaultSource})
	if err != nil {
		panic("policy: the shipped default policies do not parse: " + err.Error())
	}
	return s
})

// Default returns the compiled default policies.
func Default() *Set { return defaultSet() }

// Source is one file of policies.
type Source struct {
	Name string // for positions in errors, e.g. "policies/support.cedar"
	Text []byte
}

// Set is a compiled, immutable set of policies, indexed by tool. Safe for
// concurrent use.
type Set struct {
	entries    []*entry
	byID       map[cedar.PolicyID]*entry
	all        []*entry
	byTool     map[string][]*entry
	byUpstream map[string][]*entry
	byItem     map[string][]*entry // by itemKey: policies scoped to one resource or prompt
	warnings   []string
	digest     [32]byte

	visMu    sync.Mutex
	visCache map[string]bool // visibility answers, see Visible
	planMu   sync.RWMutex
	plans    map[planKey]*plan // by tool and upstream
}

type entry struct {
	id       cedar.PolicyID
	where    string // file:line
	p        *cedar.Policy
	forbid   bool
	approval string
	reason   string
	// What of the context the policy reads: nothing, its scalar members
	// (scene, request_id, agent, depth, tenant), named argument fields, or
	// all of the arguments.
	ctx       members
	argFields []string
	allArgs   bool
	// noCall: its action scope leaves out tool calls, so no call's plan
	// holds it.
	noCall bool
}

// members is a set of context members.
type members uint8

const (
	mScene members = 1 << iota
	mRequestID
	mAgent
	mDepth
	mArguments
	mTenant
	mAll = mScene | mRequestID | mAgent | mDepth | mArguments | mTenant
)

func memberOf(name types.String) members {
	switch name {
	case "scene":
		return mScene
	case "request_id":
		return mRequestID
	case "agent":
		return mAgent
	case "depth":
		return mDepth
	case "arguments":
		return mArguments
	case "tenant":
		return mTenant
	}
	return 0
}

// contextUse finds what of the context a policy's conditions read. A use of
// the context or its arguments other than context.<member>,
// context.arguments.<field> or `has` on them counts as reading all of the
// arguments.
func contextUse(a *xast.Policy, e *entry) {
	isVar := func(n xast.IsNode, name string) bool {
		v, ok := n.(xast.NodeTypeVariable)
		return ok && v.Name == types.String(name)
	}
	isArgs := func(n xast.IsNode) bool {
		acc, ok := n.(xast.NodeTypeAccess)
		return ok && acc.Value == "arguments" && isVar(acc.Arg, "context")
	}
	for _, c := range a.Conditions {
		xast.Inspect(xast.NewNode(c.Body), func(n xast.IsNode) bool {
			var op xast.StrOpNode
			switch n := n.(type) {
			case xast.NodeTypeAccess:
				op = n.StrOpNode
			case xast.NodeTypeHas:
				op = n.StrOpNode
			case xast.NodeTypeVariable:
				if n.Name == "context" { // the context as a whole
					e.ctx, e.allArgs = mAll, true
				}
				return true
			default:
				return true
			}
			switch {
			case isArgs(op.Arg): // context.arguments.<field>, context.arguments has <field>
				e.ctx |= mArguments
				if !slices.Contains(e.argFields, string(op.Value)) {
					e.argFields = append(e.argFields, string(op.Value))
				}
				return false
			case isVar(op.Arg, "context"):
				e.ctx |= memberOf(op.Value)
				if _, has := n.(xast.NodeTypeHas); !has && op.Value == "arguments" {
					e.allArgs = true // context.arguments used whole
				}
				return false
			}
			return true
		})
	}
}

// Parse compiles policies from sources. Each policy is named by its
// @id("...") annotation, or "file:line" without one; names must be unique.
// An @approval other than "user" or "user+reviewer", or on a forbid, is an
// error.
func Parse(srcs ...Source) (*Set, error) {
	s := &Set{byID: map[cedar.PolicyID]*entry{}, byTool: map[string][]*entry{}, byUpstream: map[string][]*entry{}}
	for _, src := range srcs {
		list, err := cedar.NewPolicyListFromBytes(src.Name, src.Text)
		if err != nil {
			return nil, parseError(src.Name, err)
		}
		for _, p := range list {
			if err := s.add(src.Name, p); err != nil {
				return nil, err
			}
		}
	}
	s.digest = digestOf(srcs)
	return s, nil
}

// cedarPos is the position Cedar's parser gives in its errors: it names
// no file, whatever name it was given.
var cedarPos = regexp.MustCompile(` at <input>:(\d+):(\d+)`)

// parseError is Cedar's parse error of file as "file:line:column: ...",
// as compilers say it: Cedar's own named "<input>", and whoever read it at
// startup or in a reload's log had to guess which file of a folder it was.
func parseError(file string, err error) error {
	msg := err.Error()
	m := cedarPos.FindStringSubmatchIndex(msg)
	if m == nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return &fileError{msg: fmt.Sprintf("%s:%s:%s: %s", file, msg[m[2]:m[3]], msg[m[4]:m[5]], plainParseError(msg[:m[0]]+msg[m[1]:])), err: err}
}

// cedarWant is Cedar's error for a token other than the one the grammar
// needs there: `parse error "GOT": exact got GOT want WANT`, or `got GOT
// want ,` in a list.
var cedarWant = regexp.MustCompile(`^parser error: parse error "((?:[^"\\]|\\.)*)": (?:exact )?got .* want (\S+)$`)

// plainParseError says Cedar's "exact got X want Y" as a person would:
// what was expected and what was found there (the end of the file for an
// empty token), and, for a missing ";", where it goes: a policy left
// without one is usually the one before the position, whose end the parser
// passed.
func plainParseError(msg string) string {
	m := cedarWant.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	found := "the file ends"
	if m[1] != "" {
		found = "found \"" + m[1] + "\""
	}
	out := fmt.Sprintf("parse error: expected %q, but %s", m[2], found)
	if m[2] == ";" {
		out += `: every policy ends with ";" after its last clause (look at the end of the policy before this point)`
	}
	return out
}

// fileError is an error with its text rewritten; it unwraps to the
// original.
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.err }

func (s *Set) add(file string, p *cedar.Policy) error {
	pos := p.Position()
	where := fmt.Sprintf("%s:%d", file, pos.Line)
	ann := p.Annotations()
	e := &entry{id: cedar.PolicyID(where), where: where, p: p, forbid: p.Effect() == cedar.Forbid}
	if id, ok := ann["id"]; ok {
		if id == "" {
			return fmt.Errorf("%s: @id is empty", where)
		}
		e.id = cedar.PolicyID(id)
	}
	if _, dup := s.byID[e.id]; dup {
		return fmt.Errorf("%s: a policy named %q is already defined", where, e.id)
	}
	if a, ok := ann["approval"]; ok {
		switch a {
		case ApprovalUser, ApprovalUserReviewer:
		default:
			return fmt.Errorf("%s: @approval(%q): want %q or %q", where, a, ApprovalUser, ApprovalUserReviewer)
		}
		if e.forbid {
			return fmt.Errorf("%s: @approval on a forbid means nothing; put it on a permit", where)
		}
		e.approval = string(a)
	}
	e.reason = string(ann["reason"])
	s.entries = append(s.entries, e)
	s.byID[e.id] = e

	a := (*xast.Policy)(p.AST())
	contextUse(a, e)
	s.warnings = append(s.warnings, attributeTypos(a, named(where, e.id))...)
	e.noCall = !actionMay(a.Action, CallAction)
	if why := actionNeverMatches(a.Action); why != "" {
		s.warnings = append(s.warnings, fmt.Sprintf("%s can never apply: %s", named(where, e.id), why))
		return nil
	}
	switch r := a.Resource.(type) {
	case xast.ScopeTypeEq:
		return s.index(e, where, r.Entity)
	case xast.ScopeTypeIn:
		return s.index(e, where, r.Entity)
	case xast.ScopeTypeIsIn:
		if !resourceType(r.Type) {
			s.warnings = append(s.warnings, fmt.Sprintf("%s can never apply: resources are %s, %s or %s, not %s", named(where, e.id), ToolType, ResourceType, PromptType, r.Type))
			return nil
		}
		return s.index(e, where, r.Entity)
	case xast.ScopeTypeIs:
		if !resourceType(r.Type) {
			s.warnings = append(s.warnings, fmt.Sprintf("%s can never apply: resources are %s, %s or %s, not %s", named(where, e.id), ToolType, ResourceType, PromptType, r.Type))
			return nil
		}
	}
	s.all = append(s.all, e)
	return nil
}

// The attributes reach gives every resource (a tool, an upstream's resource
// or prompt) and the members of every context. A principal's are open: an
// API key's attributes and a JWT's claims add to them.
var (
	resourceAttrs = []string{"name", "access", "upstream", "tags"}
	contextAttrs  = []string{"arguments", "scene", "request_id", "agent", "depth", "tenant"}
)

// attributeTypos warns about a policy that reads an attribute no resource
// or context has (resource.acess, context.scen): Cedar evaluates that to an
// error, which denies every call the policy is evaluated for, and a `has`
// test of one is never true. `reach validate` and a reload print them; the
// policy is kept as written.
func attributeTypos(a *xast.Policy, name string) []string {
	var out []string
	seen := map[string]bool{}
	check := func(n xast.StrOpNode, has bool) {
		v, ok := n.Arg.(xast.NodeTypeVariable)
		if !ok {
			return
		}
		var known []string
		var what string
		switch v.Name {
		case "resource":
			known, what = resourceAttrs, "no tool, resource or prompt has"
		case "context":
			known, what = contextAttrs, "no call's context has"
		default:
			return
		}
		attr := string(n.Value)
		if slices.Contains(known, attr) || seen[string(v.Name)+"."+attr] {
			return
		}
		seen[string(v.Name)+"."+attr] = true
		ref := fmt.Sprintf("%s.%s", v.Name, attr)
		effect := "evaluating it is an error, and a call it is evaluated for is denied"
		if has {
			ref, effect = fmt.Sprintf("%s has %s", v.Name, attr), "the test is never true"
		}
		hint := ""
		if c := names.Closest(attr, slices.Values(known), 1); len(c) > 0 {
			hint = fmt.Sprintf(" (did you mean %s?)", c[0])
		}
		out = append(out, fmt.Sprintf("%s reads %s, an attribute %s%s: %s; the attributes are %s",
			name, ref, what, hint, effect, strings.Join(known, ", ")))
	}
	for _, c := range a.Conditions {
		xast.Inspect(xast.NewNode(c.Body), func(n xast.IsNode) bool {
			switch n := n.(type) {
			case xast.NodeTypeAccess:
				check(n.StrOpNode, false)
			case xast.NodeTypeHas:
				check(n.StrOpNode, true)
			}
			return true
		})
	}
	return out
}

// named is where a policy is written, and its @id when it has one.
func named(where string, id cedar.PolicyID) string {
	if string(id) == where {
		return where
	}
	return fmt.Sprintf("%s (%s)", where, id)
}

func resourceType(t types.EntityType) bool {
	return t == ToolType || t == ResourceType || t == PromptType
}

// index files e under the tool, upstream, resource or prompt its resource
// scope names.
func (s *Set) index(e *entry, where string, uid types.EntityUID) error {
	switch uid.Type {
	case ToolType:
		s.byTool[string(uid.ID)] = append(s.byTool[string(uid.ID)], e)
	case UpstreamType:
		s.byUpstream[string(uid.ID)] = append(s.byUpstream[string(uid.ID)], e)
	case ResourceType, PromptType:
		k := itemKey(string(uid.Type), string(uid.ID))
		if s.byItem == nil {
			s.byItem = map[string][]*entry{}
		}
		s.byItem[k] = append(s.byItem[k], e)
	default:
		s.warnings = append(s.warnings, fmt.Sprintf("%s can never apply: its resource scope names %s, which is not a tool, a resource, a prompt or an upstream", named(where, e.id), uid))
	}
	return nil
}

// actionMay reports whether an action scope may match the action.
func actionMay(n xast.IsActionScopeNode, action types.EntityUID) bool {
	switch a := n.(type) {
	case xast.ScopeTypeEq:
		return a.Entity == action
	case xast.ScopeTypeIn:
		return a.Entity == action
	case xast.ScopeTypeInSet:
		return slices.Contains(a.Entities, action)
	}
	return true
}

// actionNames spells actions as policies write them (Action::"call").
func actionNames() []string {
	s := make([]string, len(actions))
	for i, a := range actions {
		s[i] = a.String()
	}
	return s
}

// actionList spells actions for a message: Action::"call", ... and
// Action::"complete".
var actionList = names.List(actionNames(), "and")

func actionNeverMatches(n xast.IsActionScopeNode) string {
	switch a := n.(type) {
	case xast.ScopeTypeEq:
		if !slices.Contains(actions, a.Entity) {
			return fmt.Sprintf("its action is %s; the actions are %s", a.Entity, actionList)
		}
	case xast.ScopeTypeIn:
		if !slices.Contains(actions, a.Entity) {
			return fmt.Sprintf("its action is in %s; the actions are %s", a.Entity, actionList)
		}
	case xast.ScopeTypeInSet:
		if !slices.ContainsFunc(a.Entities, func(u types.EntityUID) bool { return slices.Contains(actions, u) }) {
			return fmt.Sprintf("its actions include none of %s", names.List(actionNames(), "or"))
		}
	}
	return ""
}

// Load reads policies from a file, or from every *.cedar file of a folder
// (not its subfolders), in name order.
func Load(path string) (*Set, error) {
	srcs, err := readSources(path)
	if err != nil {
		return nil, err
	}
	return Parse(srcs...)
}

// loadError is the error of a policy path, or a file of its folder, that
// cannot be read; one that does not exist says what to do. A symbolic link
// to nothing (its target moved or removed) says which link and where it
// points: before, it failed with the bare "stat NAME: no such file or
// directory", which told neither that NAME was a link nor what to do.
func loadError(path string, err error) error {
	if target, lerr := os.Readlink(path); lerr == nil && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("loading policies: %s is a symbolic link to %s, which does not exist: remove the link, or point it at a policy file: %w", path, target, err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("loading policies: %s does not exist: write the policies there (a .cedar file, or a folder of them: reach policies default -o FILE writes the shipped ones to start from; docs/PERMISSIONS.md has examples), or leave policy out to decide by access level (with auth, by the shipped policies): %w", path, err)
	}
	return fmt.Errorf("loading policies: %w", err)
}

func readSources(path string) ([]Source, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, loadError(path, err)
	}
	if !fi.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, loadError(path, err)
		}
		return []Source{{Name: path, Text: b}}, nil
	}
	names, err := policyFiles(path)
	if err != nil {
		return nil, err
	}
	srcs := make([]Source, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, loadError(n, err)
		}
		srcs = append(srcs, Source{Name: n, Text: b})
	}
	return srcs, nil
}

// policyFiles lists a folder's *.cedar files, not hidden ones. A symbolic
// link is one: a forbid linked in from a shared folder, or every file of a
// Kubernetes ConfigMap mounted as a folder, was left out without a word
// (only regular files were read), and what it forbade ran. It is read as
// its target; a link to nothing fails to load, naming the link and its
// target (loadError), and a link to a folder as a file that cannot be read.
func policyFiles(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading policies: %w", err)
	}
	var out []string
	for _, de := range des {
		if (de.Type().IsRegular() || de.Type()&fs.ModeSymlink != 0) && strings.HasSuffix(de.Name(), ".cedar") && !strings.HasPrefix(de.Name(), ".") {
			out = append(out, filepath.Join(dir, de.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loading policies: no *.cedar file in %s: write the policies in a .cedar file there (reach policies default -o FILE writes the shipped ones to start from; docs/PERMISSIONS.md has examples), or leave policy out to decide by access level (with auth, by the shipped policies): %w", dir, fs.ErrNotExist)
	}
	return out, nil
}

// Len returns the number of policies.
func (s *Set) Len() int { return len(s.entries) }

// IDs returns the policies' names in load order.
func (s *Set) IDs() []string {
	out := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = string(e.id)
	}
	return out
}

// Warnings lists policies that can never apply (their scope names another
// action or entity type), which is usually a typo.
func (s *Set) Warnings() []string { return slices.Clone(s.warnings) }

// Scope is a tool or an upstream that a policy's resource scope names
// (resource == Reach::Tool::"x", resource in Reach::Upstream::"u").
type Scope struct {
	Upstream bool   // an upstream's name, else a tool's
	Name     string // as written
	Policy   string // where the policy is written, and its @id
}

// Scopes lists the tools and upstreams the policies' resource scopes name,
// sorted by name then policy: a name that is no tool or upstream of the
// gateway (a typo) makes its policy apply to nothing, and a forbid so
// written forbids nothing.
func (s *Set) Scopes() []Scope {
	var out []Scope
	for m, up := range map[*map[string][]*entry]bool{&s.byTool: false, &s.byUpstream: true} {
		for name, es := range *m {
			for _, e := range es {
				out = append(out, Scope{Upstream: up, Name: name, Policy: named(e.where, e.id)})
			}
		}
	}
	slices.SortFunc(out, func(a, b Scope) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Policy, b.Policy), cmp.Compare(fmt.Sprint(a.Upstream), fmt.Sprint(b.Upstream)))
	})
	return out
}

// Digest returns the SHA-256 of the sources the set was parsed from.
func (s *Set) Digest() [32]byte { return s.digest }

// Principal is who a call acts for, as policies see it.
type Principal struct {
	ID         string
	Roles      []string
	Tenant     string
	Attributes map[string]string
}

// PrincipalOf returns the principal of a request.
func PrincipalOf(r *reach.Request) Principal {
	return Principal{ID: r.Principal(), Roles: r.Roles(), Tenant: r.Tenant(), Attributes: r.Attributes()}
}

// Authenticated reports whether the principal is someone: not empty and not
// "anonymous" (the runtime's name for nobody).
func (p *Principal) Authenticated() bool { return p.ID != "" && p.ID != "anonymous" }

func (p *Principal) entity() types.Entity {
	m := make(types.RecordMap, 4+len(p.Attributes))
	for k, v := range p.Attributes {
		m[types.String(k)] = types.String(v)
	}
	roles := make([]types.Value, len(p.Roles))
	parents := make([]types.EntityUID, len(p.Roles), len(p.Roles)+1)
	for i, r := range p.Roles {
		roles[i] = types.String(r)
		parents[i] = types.NewEntityUID(RoleType, types.String(r))
	}
	if p.Tenant != "" {
		parents = append(parents, types.NewEntityUID(TenantType, types.String(p.Tenant)))
	}
	m["id"] = types.String(p.ID)
	m["authenticated"] = types.Boolean(p.Authenticated())
	m["roles"] = types.NewSet(roles...)
	m["tenant"] = types.String(p.Tenant)
	return types.Entity{
		UID:        types.NewEntityUID(PrincipalType, types.String(p.ID)),
		Parents:    types.NewEntityUIDSet(parents...),
		Attributes: types.NewRecord(m),
	}
}

// Upstream returns the upstream prefix of a tool name ("github" for
// "github__create_issue"), or "".
func Upstream(tool string) string {
	up, _, ok := strings.Cut(tool, "__")
	if !ok {
		return ""
	}
	return up
}

// UpstreamTag begins the tag that names the upstream serving a tool
// ("upstream:docs"): the gateway tags each upstream tool with it, and a
// configuration cannot.
const UpstreamTag = "upstream:"

// ToolUpstream returns the upstream of a tool as its policies see it: the
// one its tags name (UpstreamTag), the upstream's configured name, as
// its resources and prompts see it, whatever prefix its tools' names
// carry (prefix: "" or another); else the prefix of its name (Upstream),
// for tools tagged with none.
func ToolUpstream(tool string, tags []string) string {
	for _, t := range tags {
		if up, ok := strings.CutPrefix(t, UpstreamTag); ok {
			return up
		}
	}
	return Upstream(tool)
}

func toolEntity(name string, access reach.Access, tags []string) types.Entity {
	if access == "" {
		access = reach.Read
	}
	ts := make([]types.Value, len(tags))
	for i, t := range tags {
		ts[i] = types.String(t)
	}
	up := ToolUpstream(name, tags)
	var parents types.EntityUIDSet
	if up != "" {
		parents = types.NewEntityUIDSet(types.NewEntityUID(UpstreamType, types.String(up)))
	}
	return types.Entity{
		UID:     types.NewEntityUID(ToolType, types.String(name)),
		Parents: parents,
		Attributes: types.NewRecord(types.RecordMap{
			"name":     types.String(name),
			"access":   types.String(access),
			"upstream": types.String(up),
			"tags":     types.NewSet(ts...),
		}),
	}
}

// callEntities is the entity store of one request: its principal and tool.
type callEntities struct{ p, r *types.Entity }

func (g callEntities) Get(uid types.EntityUID) (types.Entity, bool) {
	switch uid {
	case g.p.UID:
		return *g.p, true
	case g.r.UID:
		return *g.r, true
	}
	return types.Entity{}, false
}

// applicable iterates the policies that may apply to one tool.
type applicable [3][]*entry

func (s *Set) applicable(tool, upstream string) *applicable {
	return &s.plan(tool, upstream).pol
}

// plan is what deciding a call of one tool takes: the policies that may
// apply, and what of the context they read.
type plan struct {
	pol       applicable
	ctx       members
	allArgs   bool
	argFields []string
}

// planKey is a tool and its upstream (ToolUpstream): the policies that
// may apply to it.
type planKey struct{ tool, upstream string }

// maxPlans bounds the plans kept per set.
const maxPlans = 100_000

// plan returns the plan of a tool served by upstream (ToolUpstream).
func (s *Set) plan(tool, upstream string) *plan {
	key := planKey{tool, upstream}
	s.planMu.RLock()
	pl := s.plans[key]
	s.planMu.RUnlock()
	if pl != nil {
		return pl
	}
	pl = &plan{pol: applicable{callsOnly(s.byTool[tool]), callsOnly(s.byUpstream[upstream]), callsOnly(s.all)}}
	for _, l := range pl.pol {
		for _, e := range l {
			pl.ctx |= e.ctx
			pl.allArgs = pl.allArgs || e.allArgs
			for _, f := range e.argFields {
				if !slices.Contains(pl.argFields, f) {
					pl.argFields = append(pl.argFields, f)
				}
			}
		}
	}
	s.planMu.Lock()
	if s.plans == nil || len(s.plans) >= maxPlans {
		s.plans = map[planKey]*plan{}
	}
	s.plans[key] = pl
	s.planMu.Unlock()
	return pl
}

// callsOnly returns the policies of l that may apply to a tool call.
func callsOnly(l []*entry) []*entry {
	if !slices.ContainsFunc(l, func(e *entry) bool { return e.noCall }) {
		return l
	}
	return slices.DeleteFunc(slices.Clone(l), func(e *entry) bool { return e.noCall })
}

// arguments converts what the plan's policies read of the arguments.
func (pl *plan) arguments(args []byte) (types.Value, error) {
	switch {
	case pl.allArgs:
		return Arguments(args)
	case len(pl.argFields) == 0:
		return emptyRecord, nil
	}
	return argumentFields(args, pl.argFields)
}

func (a *applicable) All() iter.Seq2[cedar.PolicyID, *cedar.Policy] {
	return func(yield func(cedar.PolicyID, *cedar.Policy) bool) {
		for _, l := range a {
			for _, e := range l {
				if !yield(e.id, e.p) {
					return
				}
			}
		}
	}
}

// Input is one authorization question, for [Engine.Evaluate] (what-if
// questions, tests, replay under another policy).
type Input struct {
	Principal Principal
	Tool      string
	Access    reach.Access // if empty, read
	Tags      []string
	Arguments json.RawMessage // if empty, {}
	Scene     string
	RequestID string
	Agent     string
	Depth     int
}

// Result is a decision with its grounds.
type Result struct {
	Decision reach.Decision
	// Approval is "user" or "user+reviewer" when Decision is NeedsApproval.
	Approval string
	// Policies names the policies that decided: the permits that allowed,
	// or the forbids that denied (none when no permit applied).
	Policies []string
	// Reason is the @reason of the first deciding forbid, if any.
	Reason string
	// Errors are evaluation errors; any error denies.
	Errors []string
}

// Evaluate answers one authorization question under the set.
func (s *Set) Evaluate(in *Input) Result {
	r, _ := s.evaluate(in)
	return r
}

// evaluate is Evaluate that also names the policies whose evaluation
// failed ("arguments" when the arguments could not be converted): what may
// be logged of an error, whose text can quote the arguments.
func (s *Set) evaluate(in *Input) (Result, []string) {
	pe := in.Principal.entity()
	re := toolEntity(in.Tool, in.Access, in.Tags)
	args, err := Arguments(in.Arguments)
	if err != nil {
		return Result{Decision: reach.Deny, Errors: []string{"arguments: " + err.Error()}}, []string{"arguments"}
	}
	dec, diag := s.decide(s.applicable(in.Tool, ToolUpstream(in.Tool, in.Tags)), &pe, &re, contextRecord(args, in.Scene, in.RequestID, in.Agent, in.Principal.Tenant, in.Depth))
	var failed []string
	for _, de := range diag.Errors {
		failed = append(failed, string(de.PolicyID))
	}
	return s.result(dec, diag), failed
}

func contextRecord(args types.Value, scene, requestID, agent, tenant string, depth int) types.Record {
	return types.NewRecord(types.RecordMap{
		"arguments":  args,
		"scene":      types.String(scene),
		"request_id": types.String(requestID),
		"agent":      types.String(agent),
		"depth":      types.Long(depth),
		"tenant":     types.String(tenant),
	})
}

func (s *Set) decide(pol *applicable, pe, re *types.Entity, ctx types.Record) (cedar.Decision, cedar.Diagnostic) {
	return s.decideAction(pol, pe, re, CallAction, ctx)
}

func (s *Set) decideAction(pol *applicable, pe, re *types.Entity, action types.EntityUID, ctx types.Record) (cedar.Decision, cedar.Diagnostic) {
	return cedar.Authorize(pol, callEntities{pe, re}, cedar.Request{
		Principal: pe.UID, Action: action, Resource: re.UID, Context: ctx})
}

var emptyRecord = types.NewRecord(nil)

// result interprets a Cedar answer: errors deny, approvals come from the
// deciding permits' annotations.
func (s *Set) result(dec cedar.Decision, diag cedar.Diagnostic) Result {
	var r Result
	for _, e := range diag.Errors {
		r.Errors = append(r.Errors, e.String())
	}
	for _, why := range diag.Reasons {
		r.Policies = append(r.Policies, string(why.PolicyID))
	}
	r.Decision, r.Approval, r.Reason = s.interpret(dec, &diag)
	return r
}

func (s *Set) interpret(dec cedar.Decision, diag *cedar.Diagnostic) (reach.Decision, string, string) {
	if len(diag.Errors) > 0 {
		return reach.Deny, "", ""
	}
	if dec != cedar.Allow {
		for _, why := range diag.Reasons {
			if e := s.byID[why.PolicyID]; e != nil && e.reason != "" {
				return reach.Deny, "", e.reason
			}
		}
		if len(diag.Reasons) > 0 { // a forbid without @reason decided it
			return reach.Deny, "", "a policy forbids it"
		}
		return reach.Deny, "", ""
	}
	approval := ""
	for _, why := range diag.Reasons {
		if e := s.byID[why.PolicyID]; e != nil && stricter(e.approval, approval) {
			approval = e.approval
		}
	}
	if approval != "" {
		return reach.NeedsApproval, approval, ""
	}
	return reach.Permit, "", ""
}

func stricter(a, b string) bool { return rank(a) > rank(b) }

func rank(a string) int {
	switch a {
	case ApprovalUser:
		return 1
	case ApprovalUserReviewer:
		return 2
	}
	return 0
}

// Options configure an Engine. A nil *Options means all defaults.
type Options struct {
	// Policies in force at first; if nil, [Default].
	Policies *Set
	// Tools lists the catalog, from which a denial picks alternatives (e.g.
	// Runtime.Tools); if nil, denials name none.
	Tools func() []reach.Tool
	// MaxVisible caps the tools Filter returns; if zero, 50.
	MaxVisible int
	// Logger receives evaluation errors; if nil, they are not logged.
	Logger *slog.Logger
}

// Engine is a reach.Authorizer over a Set of Cedar policies that can be
// replaced at any time (see [Watcher]). Safe for concurrent use.
type Engine struct {
	set        atomic.Pointer[Set]
	tools      func() []reach.Tool
	maxVisible int
	log        *slog.Logger
	toolCache  sync.Map // tool name -> *cachedTool
	toolCount  atomic.Int32
	principals sync.Map // *reach.Request -> *types.Entity
	princCount atomic.Int32
}

// maxPrincipals bounds the principal entities kept (one per request).
const maxPrincipals = 4096

// principal returns the principal entity of a request, built once: a
// request's principal, roles, tenant and attributes never change.
func (e *Engine) principal(r *reach.Request) *types.Entity {
	if v, ok := e.principals.Load(r); ok {
		return v.(*types.Entity)
	}
	p := PrincipalOf(r)
	ent := p.entity()
	if e.princCount.Add(1) > maxPrincipals {
		// Forget the requests that are over, or everything if none is.
		n := int32(0)
		e.principals.Range(func(k, _ any) bool {
			if k.(*reach.Request).State() != reach.RequestRunning {
				e.principals.Delete(k)
			} else {
				n++
			}
			return true
		})
		if n > maxPrincipals/2 {
			e.principals.Clear()
			n = 0
		}
		e.princCount.Store(n + 1)
	}
	e.principals.Store(r, &ent)
	return &ent
}

var _ reach.Authorizer = (*Engine)(nil)

// New returns an Engine with the options (nil for defaults).
func New(opts *Options) *Engine {
	var o Options
	if opts != nil {
		o = *opts
	}
	e := &Engine{tools: o.Tools, maxVisible: cmp.Or(o.MaxVisible, 50), log: o.Logger}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if o.Policies == nil {
		o.Policies = Default()
	}
	e.set.Store(o.Policies)
	return e
}

// Policies returns the set in force.
func (e *Engine) Policies() *Set { return e.set.Load() }

// Replace puts s in force at once; calls being decided finish under the
// set they started with.
func (e *Engine) Replace(s *Set) {
	if s == nil {
		panic("policy: Replace with a nil set")
	}
	e.set.Store(s)
}

// Evaluate answers one authorization question under the set in force.
func (e *Engine) Evaluate(in *Input) Result { return e.set.Load().Evaluate(in) }

type cachedTool struct {
	access reach.Access
	tags   []string
	ent    types.Entity
}

// tool returns the resource entity of a tool, cached while its access and
// tags stay the same.
func (e *Engine) tool(name string, access reach.Access, tags []string) *types.Entity {
	if v, ok := e.toolCache.Load(name); ok {
		ct := v.(*cachedTool)
		if ct.access == access && slices.Equal(ct.tags, tags) {
			return &ct.ent
		}
	}
	ct := &cachedTool{access: access, tags: slices.Clone(tags), ent: toolEntity(name, access, tags)}
	if e.toolCount.Add(1) > 100_000 {
		e.toolCache.Clear()
		e.toolCount.Store(0)
	}
	e.toolCache.Store(name, ct)
	return &ct.ent
}

// Authorize implements reach.Authorizer: Permit, NeedsApproval, or Deny with
// a *reach.Error that says why and names alternatives.
func (e *Engine) Authorize(ctx context.Context, c *reach.Call) (reach.Decision, *reach.Error) {
	s := e.set.Load()
	r := c.Request()
	if r == nil {
		return reach.Deny, e.denial(s, c, "the call belongs to no request")
	}
	pe := e.principal(r)
	re := e.tool(c.Tool, c.Access(), c.Tags())
	pl := s.plan(c.Tool, ToolUpstream(c.Tool, c.Tags()))
	// Build only the context the applicable policies read: converting the
	// arguments is most of the cost of a decision.
	// A member no policy reads is left out: none can tell.
	ctxRec := emptyRecord
	if pl.ctx != 0 {
		m := getMap()
		defer putMap(m)
		if pl.ctx&mArguments != 0 {
			args, err := pl.arguments(c.Args())
			if err != nil {
				e.log.Warn("policy: arguments not converted; denied", "tool", c.Tool, "request", r.ID(), "err", err)
				return reach.Deny, e.denial(s, c, "its arguments could not be checked against the policies")
			}
			m["arguments"] = args
		}
		if pl.ctx&mScene != 0 {
			m["scene"] = types.String(r.Scene())
		}
		if pl.ctx&mRequestID != 0 {
			m["request_id"] = types.String(r.ID())
		}
		if pl.ctx&mAgent != 0 {
			m["agent"] = types.String(r.Agent())
		}
		if pl.ctx&mDepth != 0 {
			m["depth"] = types.Long(depthOf(c))
		}
		if pl.ctx&mTenant != 0 {
			m["tenant"] = types.String(r.Tenant())
		}
		ctxRec = types.NewRecord(m)
	}
	dec, diag := s.decide(&pl.pol, pe, re, ctxRec)
	d, _, reason := s.interpret(dec, &diag)
	switch {
	case len(diag.Errors) > 0:
		for _, de := range diag.Errors {
			e.log.Warn("policy: evaluation error; denied", "tool", c.Tool, "request", r.ID(), "principal", r.Principal(),
				"policy", string(de.PolicyID), "err", de.Message)
		}
		return reach.Deny, e.denial(s, c, "a policy could not be evaluated for this call")
	case d == reach.Deny:
		if reason == "" {
			reason = "no policy permits it"
		}
		return reach.Deny, e.denial(s, c, reason)
	}
	return d, nil
}

// Requirement returns the approval a call needs under the policies in
// force: "user", "user+reviewer", or "" when they ask none (the queue then
// decides by the tool's access). It evaluates the policies again; if that
// fails (an evaluation error, or a denial because the policies were
// reloaded since the call was authorized), it answers the strictest,
// "user+reviewer", and logs why: a policy error never lowers who must
// approve.
func (e *Engine) Requirement(_ context.Context, c *reach.Call) string {
	r := c.Request()
	if r == nil {
		e.log.Warn("policy: approval asked for a call of no request; the user and a reviewer must approve", "tool", c.Tool)
		return ApprovalUserReviewer
	}
	res, failed := e.set.Load().evaluate(&Input{Principal: PrincipalOf(r), Tool: c.Tool, Access: c.Access(), Tags: c.Tags(),
		Arguments: c.Args(), Scene: r.Scene(), RequestID: r.ID(), Agent: r.Agent(), Depth: depthOf(c)})
	switch {
	case len(res.Errors) > 0:
		// The errors' text can quote the arguments: log the policies only.
		e.log.Warn("policy: evaluation error asking who must approve; the user and a reviewer must", "tool", c.Tool,
			"request", r.ID(), "principal", r.Principal(), "policies", failed)
		return ApprovalUserReviewer
	case res.Decision == reach.Deny:
		e.log.Warn("policy: the policies in force deny a call waiting for approval; the user and a reviewer must approve", "tool", c.Tool,
			"request", r.ID(), "principal", r.Principal(), "policies", res.Policies)
		return ApprovalUserReviewer
	}
	return res.Approval
}

func depthOf(c *reach.Call) int {
	if f := c.Frame(); f != nil {
		return f.Depth
	}
	if p := c.Parent(); p != nil {
		return p.Depth + 1
	}
	return 1
}

// denial builds the refusal: why, and what the caller may use instead.
func (e *Engine) denial(s *Set, c *reach.Call, why string) *reach.Error {
	err := &reach.Error{Guard: "authorize", Type: reach.TypePermission, Code: "denied",
		Message: fmt.Sprintf("You may not call %s: %s.", c.Tool, why)}
	if r := c.Request(); r != nil {
		p := PrincipalOf(r)
		err.Alternatives = e.alternatives(s, c, &p)
	}
	if len(err.Alternatives) > 0 {
		err.Suggestion = "Use one of the alternatives if it serves, or ask the user to request access."
	} else {
		err.Suggestion = fmt.Sprintf("Ask the user to request access to %s; do not retry it.", c.Tool)
	}
	return err
}

// maxAlternatives is how many tools a denial names at most.
const maxAlternatives = 3

// alternatives names tools that share tags (but the upstream's) or name
// words with the denied one and that the policies could permit to the
// same principal in the same scene.
func (e *Engine) alternatives(s *Set, c *reach.Call, p *Principal) []string {
	if e.tools == nil {
		return nil
	}
	type cand struct {
		t     reach.Tool
		score int
	}
	words := nameWords(c.Tool)
	var cs []cand
	for _, t := range e.tools() {
		if t.Name == c.Tool || t.Access == reach.Forbidden {
			continue
		}
		score := 0
		for _, tag := range t.Tags {
			// The tag that names a tool's upstream, which the gateway
			// gives every tool of it, says nothing of what the tool does:
			// a denied refund's siblings that read are no way to refund.
			if strings.HasPrefix(tag, UpstreamTag) {
				continue
			}
			if slices.Contains(c.Tags(), tag) {
				score += 2
			}
		}
		for _, w := range nameWords(t.Name) {
			if slices.Contains(words, w) {
				score++
			}
		}
		if score > 0 {
			cs = append(cs, cand{t, score})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		return cmp.Or(b.score-a.score, cmp.Compare(a.t.Name, b.t.Name))
	})
	scene := ""
	if r := c.Request(); r != nil {
		scene = r.Scene()
	}
	var out []string
	for i, cd := range cs {
		if len(out) == maxAlternatives || i == 50 {
			break
		}
		if s.visible(p, scene, cd.t.Name, cd.t.Access, cd.t.Tags) {
			out = append(out, cd.t.Name)
		}
	}
	return out
}

// nameWords splits a tool name into its words, without the upstream prefix
// and without words too common to mean anything.
func nameWords(name string) []string {
	if _, rest, ok := strings.Cut(name, "__"); ok {
		name = rest
	}
	ws := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	return slices.DeleteFunc(ws, func(w string) bool {
		switch w {
		case "get", "set", "list", "a", "the", "by", "of", "to", "for", "and":
			return true
		}
		return len(w) < 2
	})
}
