package policy

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/batch"

	"github.com/agentreach/reach"
)

// Visible reports whether some policy could permit the principal to call
// the tool in the scene, whatever the arguments (P3): permits whose
// conditions depend on the arguments, the request or the depth count as
// possibly true, forbids that depend on them as possibly false. A tool that
// needs approval is visible. An evaluation error hides the tool. Answers are
// cached until the policies change.
func (e *Engine) Visible(p Principal, scene string, t reach.Tool) bool {
	return e.set.Load().visible(&p, scene, t.Name, t.Access, t.Tags)
}

// Lists implements reach.Lister: whether the principal of c's request
// could call t in its scene (Visible). A call of no request could call none.
func (e *Engine) Lists(c *reach.Call, t reach.Tool) bool {
	r := c.Request()
	if r == nil {
		return false
	}
	return e.Visible(PrincipalOf(r), r.Scene(), t)
}

var _ reach.Lister = (*Engine)(nil)

// FilterOptions narrow a listing.
type FilterOptions struct {
	// Max caps the tools returned; if zero, Options.MaxVisible.
	Max int
	// Tags, if not empty, keeps only tools with at least one of them.
	Tags []string
}

// Filter returns the tools, in the order given, that the principal could
// call in the scene (see Visible), at most Max of them.
func (e *Engine) Filter(p Principal, scene string, tools []reach.Tool, opts *FilterOptions) []reach.Tool {
	var o FilterOptions
	if opts != nil {
		o = *opts
	}
	if o.Max <= 0 {
		o.Max = e.maxVisible
	}
	s := e.set.Load()
	var out []reach.Tool
	for _, t := range tools {
		if len(out) == o.Max {
			break
		}
		if len(o.Tags) > 0 && !slices.ContainsFunc(t.Tags, func(tag string) bool { return slices.Contains(o.Tags, tag) }) {
			continue
		}
		if s.visible(&p, scene, t.Name, t.Access, t.Tags) {
			out = append(out, t)
		}
	}
	return out
}

// maxVisCache bounds the visibility answers kept per set.
const maxVisCache = 50_000

func (s *Set) visible(p *Principal, scene, tool string, access reach.Access, tags []string) bool {
	key := visKey(p, scene, tool, access, tags)
	s.visMu.Lock()
	v, ok := s.visCache[key]
	s.visMu.Unlock()
	if ok {
		return v
	}
	v = s.couldPermit(p, scene, tool, access, tags)
	s.visMu.Lock()
	if s.visCache == nil || len(s.visCache) >= maxVisCache {
		s.visCache = map[string]bool{}
	}
	s.visCache[key] = v
	s.visMu.Unlock()
	return v
}

func visKey(p *Principal, scene, tool string, access reach.Access, tags []string) string {
	// Each part is written after its length, so that no two sets of parts
	// spell the same key whatever bytes they hold (a JWT's claims may hold
	// any, NUL included).
	keys := make([]string, 0, len(p.Attributes))
	n := len(p.ID) + len(p.Tenant) + len(scene) + len(tool) + len(access) + 8
	for k, v := range p.Attributes {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	for _, r := range p.Roles {
		n += len(r) + 1
	}
	for _, t := range tags {
		n += len(t) + 1
	}
	var b strings.Builder
	b.Grow(n)
	var l [binary.MaxVarintLen64]byte
	count := func(n int) { b.Write(l[:binary.PutUvarint(l[:], uint64(n))]) }
	put := func(s string) {
		count(len(s))
		b.WriteString(s)
	}
	for _, part := range []string{p.ID, p.Tenant, scene, tool, string(access)} {
		put(part)
	}
	count(len(p.Roles))
	for _, r := range p.Roles {
		put(r)
	}
	count(len(tags))
	for _, t := range tags {
		put(t)
	}
	count(len(keys))
	for _, k := range keys {
		put(k)
		put(p.Attributes[k])
	}
	return b.String()
}

// couldPermit evaluates the policies that apply to the tool partially, with
// everything about the call but the scene unknown.
func (s *Set) couldPermit(p *Principal, scene, tool string, access reach.Access, tags []string) bool {
	pe := p.entity()
	re := toolEntity(tool, access, tags)
	ctx := types.NewRecord(types.RecordMap{
		"arguments":  batch.Ignore(),
		"scene":      types.String(scene),
		"request_id": batch.Ignore(),
		"agent":      batch.Ignore(),
		"depth":      batch.Ignore(),
		"tenant":     types.String(p.Tenant),
	})
	permitted := false
	err := batch.Authorize(context.Background(), s.applicable(tool, ToolUpstream(tool, tags)), callEntities{&pe, &re}, batch.Request{
		Principal: pe.UID, Action: CallAction, Resource: re.UID, Context: ctx,
	}, func(r batch.Result) error {
		permitted = r.Decision == types.Allow && len(r.Diagnostic.Errors) == 0
		return nil
	})
	return err == nil && permitted
}
