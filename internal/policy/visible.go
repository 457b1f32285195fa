package policy

import (
	"context"
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
	var b strings.Builder
	for _, part := range []string{p.ID, p.Tenant, scene, tool, string(access)} {
		b.WriteString(part)
		b.WriteByte(0)
	}
	for _, r := range p.Roles {
		b.WriteString(r)
		b.WriteByte(1)
	}
	b.WriteByte(0)
	for _, t := range tags {
		b.WriteString(t)
		b.WriteByte(1)
	}
	b.WriteByte(0)
	keys := make([]string, 0, len(p.Attributes))
	for k := range p.Attributes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(2)
		b.WriteString(p.Attributes[k])
		b.WriteByte(1)
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
	})
	permitted := false
	err := batch.Authorize(context.Background(), s.applicable(tool), callEntities{&pe, &re}, batch.Request{
		Principal: pe.UID, Action: CallAction, Resource: re.UID, Context: ctx,
	}, func(r batch.Result) error {
		permitted = r.Decision == types.Allow && len(r.Diagnostic.Errors) == 0
		return nil
	})
	return err == nil && permitted
}
