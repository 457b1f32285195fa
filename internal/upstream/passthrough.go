package upstream

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/agentreach/reach/internal/reachmeta"
)

// Resources, resource templates, prompts and completions of the upstreams
// are passed through: listed by the gateway's MCP server (prompts under the
// upstream's prefix, like tools), their reads and gets forwarded to the
// upstream that has them once the Guard (the policies, when the gateway has
// them) allows it. What they
// carry reaches the client's model as a tool's result does, so secrets are
// masked in it as in one: in what is read, got and completed, and in the
// upstream's errors, by the redactor's rules; in the listings (names,
// descriptions, URIs) by its values alone, as in a tool's definition.

// Asked is what a client asks of an upstream besides a tool call, for the
// Guard to decide.
type Asked struct {
	Action   string // "read_resource" (resources/read, resources/subscribe), "get_prompt", "complete"
	Prompt   bool   // Name is a prompt's exposed name; otherwise a resource's URI (or URI template)
	Name     string
	Upstream string // the upstream's configured name
}

// Guard decides whether the client that sent req may have what it asks:
// nil to go on, or the error to answer with (the upstream is not asked).
type Guard func(ctx context.Context, req mcp.Request, a Asked) error

// SetGuard puts g in front of every resource read, prompt get, completion
// and subscription; call it before Serve.
func (p *Pool) SetGuard(g Guard) { p.guard = g }

// guarded asks the Guard, if any.
func (u *upstream) guarded(ctx context.Context, req mcp.Request, action string, prompt bool, name string) error {
	if u.p.guard == nil {
		return nil
	}
	return u.p.guard(ctx, req, Asked{Action: action, Prompt: prompt, Name: name, Upstream: u.cfg.Name})
}

// Owner returns the configured name of the upstream whose mirror put the
// prompt (by exposed name) or the resource or resource template (by URI or
// URI template) on the gateway's server, or "".
func (p *Pool) Owner(prompt bool, name string) string {
	p.mirrorMu.Lock()
	defer p.mirrorMu.Unlock()
	for _, u := range p.ups {
		m := u.mirrored
		if prompt && m.prompts[name] != nil || !prompt && (m.resources[name] != nil || m.templates[name] != nil) {
			return u.cfg.Name
		}
	}
	return ""
}

// mirrored is what an upstream's mirror put on the gateway's server, by
// URI, URI template and exposed prompt name.
type mirrored struct {
	resources map[string]*mcp.Resource
	templates map[string]*mcp.ResourceTemplate
	prompts   map[string]*mcp.Prompt // as exposed (under the upstream's prefix)
	// held are those of them whose definition the Pinner holds, by pin
	// key (PinKey): on the server, but neither listed nor served.
	held map[string]any
}

// maxMirrored bounds the resources, the resource templates and the prompts
// of one upstream's listing that its mirror puts on the gateway's server,
// as the tools of its listing are bounded: one answer of 64 MiB holds a
// million tiny resources (not measured), each kept and listed to every client. A variable
// for tests.
var maxMirrored = 10000

// fewEnough reports whether a listing of n of what is within maxMirrored,
// and logs it when not (the mirror then keeps what it had).
func (u *upstream) fewEnough(what string, n int) bool {
	if n <= maxMirrored {
		return true
	}
	u.log.Warn(fmt.Sprintf("the upstream lists more %s than reach mirrors; it keeps those it had", what), "listed", n, "bound", maxMirrored)
	return false
}

// mirror puts the upstream's resources, resource templates and prompts on
// the gateway's server, and takes off those it put there before that the
// upstream no longer lists (unless another upstream lists them: they are
// then that one's). A list that fails, or takes longer than the
// upstream's timeout, keeps what it had.
func (u *upstream) mirror(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, u.timeout())
	defer cancel()
	cs, err := u.session(lctx)
	if err != nil {
		return
	}
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{} // it offers nothing (any more)
	}
	p := u.p
	p.mirrorMu.Lock()
	old := u.mirrored
	p.mirrorMu.Unlock()
	var now mirrored // what the upstream no longer offers goes; a list that fails keeps what it had
	if caps.Resources != nil {
		now.resources, now.templates = old.resources, old.templates
		if rs, ok := mirrorList(u, "resources", func(c string) ([]*mcp.Resource, string, error) {
			res, err := cs.ListResources(lctx, &mcp.ListResourcesParams{Cursor: c})
			if err != nil {
				return nil, "", err
			}
			return res.Resources, res.NextCursor, nil
		}); ok {
			now.resources = map[string]*mcp.Resource{}
			for _, r := range rs {
				if why := unshownText(u, r.URI, r.Name, url.Parse); why != "" {
					u.log.Warn("resource skipped: "+why, "uri", u.quoted(r.URI, 256), "name", u.quoted(r.Name, 256))
					continue
				}
				m, ok := maskedOK(r, p.redactor.Values)
				if !ok {
					u.log.Warn("resource skipped: "+unmaskableText, "uri", u.quoted(r.URI, 256))
					continue
				}
				now.resources[r.URI] = m
			}
		}
		if ts, ok := mirrorList(u, "resource templates", func(c string) ([]*mcp.ResourceTemplate, string, error) {
			res, err := cs.ListResourceTemplates(lctx, &mcp.ListResourceTemplatesParams{Cursor: c})
			if err != nil {
				return nil, "", err
			}
			return res.ResourceTemplates, res.NextCursor, nil
		}); ok {
			now.templates = map[string]*mcp.ResourceTemplate{}
			for _, t := range ts {
				if why := unshownText(u, t.URITemplate, t.Name, uritemplate.New); why != "" {
					u.log.Warn("resource template skipped: "+why, "uri_template", u.quoted(t.URITemplate, 256), "name", u.quoted(t.Name, 256))
					continue
				}
				m, ok := maskedOK(t, p.redactor.Values)
				if !ok {
					u.log.Warn("resource template skipped: "+unmaskableText, "uri_template", u.quoted(t.URITemplate, 256))
					continue
				}
				now.templates[t.URITemplate] = m
			}
		}
	}
	if caps.Prompts != nil {
		now.prompts = old.prompts
		if ps, ok := mirrorList(u, "prompts", func(c string) ([]*mcp.Prompt, string, error) {
			res, err := cs.ListPrompts(lctx, &mcp.ListPromptsParams{Cursor: c})
			if err != nil {
				return nil, "", err
			}
			return res.Prompts, res.NextCursor, nil
		}); ok {
			now.prompts = map[string]*mcp.Prompt{}
			for _, pr := range ps {
				if p.redactor.Spells(u.prefix() + pr.Name) {
					continue // a name is shown as it is, and masked could not be got (see setToolsLocked)
				}
				if !promptName(u.prefix() + pr.Name) {
					u.log.Warn("prompt skipped: its name is longer than 128 bytes or holds control or format characters", "prompt", ClipText(pr.Name, 128, ""))
					continue
				}
				m, ok := maskedOK(pr, p.redactor.Values)
				if !ok {
					u.log.Warn("prompt skipped: "+unmaskableText, "prompt", ClipText(pr.Name, 128, ""))
					continue
				}
				exposed := *m
				exposed.Name = u.prefix() + pr.Name
				now.prompts[exposed.Name] = &exposed
			}
		}
	}
	now.held = u.heldOf(now, old.held)
	p.mirrorMu.Lock()
	defer p.mirrorMu.Unlock()
	for _, r := range now.resources {
		p.server.AddResource(r, u.readResource)
	}
	for _, t := range now.templates {
		p.server.AddResourceTemplate(t, u.readResource)
	}
	for name, pr := range now.prompts {
		p.server.AddPrompt(pr, u.getPrompt(strings.TrimPrefix(name, u.prefix())))
	}
	for uri := range old.resources {
		if now.resources[uri] == nil {
			if o := p.otherMirror(u, func(m mirrored) bool { return m.resources[uri] != nil }); o != nil {
				p.server.AddResource(o.mirrored.resources[uri], o.readResource)
			} else {
				p.server.RemoveResources(uri)
			}
		}
	}
	for tmpl := range old.templates {
		if now.templates[tmpl] == nil {
			if o := p.otherMirror(u, func(m mirrored) bool { return m.templates[tmpl] != nil }); o != nil {
				p.server.AddResourceTemplate(o.mirrored.templates[tmpl], o.readResource)
			} else {
				p.server.RemoveResourceTemplates(tmpl)
			}
		}
	}
	for name := range old.prompts {
		if now.prompts[name] == nil {
			if o := p.otherMirror(u, func(m mirrored) bool { return m.prompts[name] != nil }); o != nil {
				p.server.AddPrompt(o.mirrored.prompts[name], o.getPrompt(strings.TrimPrefix(name, o.prefix())))
			} else {
				p.server.RemovePrompts(name)
			}
		}
	}
	u.mirrored = now
}

// Pinning. Besides its tools, what an upstream offers a client's model
// to read or use is pinned as its tools are (P7): a prompt's title,
// description, arguments and icons, a resource's and a resource
// template's name, title, description, MIME type, annotations and icons.
// A changed one is held, as a changed tool is: left out of the listings,
// a get of the prompt or a read of the resource (or of a URI of the
// template) refused with what to do, until an operator approves the
// change (`reach tools approve KEY`, KEY its PinKey). Before, an
// upstream that changed what its prompt or resource said after it was
// approved changed what the model sees, unnoticed.

// Pinner checks the pins of what an upstream offers besides tools, by
// pin key (PinKey) each with its definition as listed (a *mcp.Prompt, as
// exposed, *mcp.Resource or *mcp.ResourceTemplate), pinning those first
// seen; it returns the keys of the held ones. A mirror asks once for all
// it lists, so that pinning thousands of resources is one write of the
// pins, not one each. The defs are those of the upstream named; with
// listing, they are its whole listing (those of its pins not in it are
// no longer listed).
type Pinner func(upstream string, defs map[string]any, listing bool) (held map[string]bool)

// SetPinner pins the prompts, resources and resource templates the pool
// mirrors with f; call it before Serve.
func (p *Pool) SetPinner(f Pinner) { p.pinner = f }

// PinKey is the key of a prompt (by exposed name), resource (by URI) or
// resource template in the pin store, beside the tools' names: kind is
// "prompt", "resource" or "resource_template".
func PinKey(kind, name string) string { return kind + ":" + name }

// heldOf asks the Pinner about all of m at once, and returns the held
// ones by pin key; it logs each newly held (not in was).
func (u *upstream) heldOf(m mirrored, was map[string]any) map[string]any {
	if u.p.pinner == nil {
		return nil
	}
	defs := make(map[string]any, len(m.prompts)+len(m.resources)+len(m.templates))
	for name, pr := range m.prompts {
		defs[PinKey("prompt", name)] = pr
	}
	for uri, r := range m.resources {
		defs[PinKey("resource", uri)] = r
	}
	for tmpl, t := range m.templates {
		defs[PinKey("resource_template", tmpl)] = t
	}
	held := map[string]any{}
	for key := range u.p.pinner(u.cfg.Name, defs, true) { // even none: what it listed before is unlisted
		def, ok := defs[key]
		if !ok {
			continue
		}
		held[key] = def
		if _, ok := was[key]; !ok {
			u.log.Warn("an upstream's prompt or resource changed its definition: it is held until approved (reach tools diff/approve)", "pin", key)
		}
	}
	return held
}

// heldErr returns the refusal of a get or read of what the pin key names,
// held: its definition changed since it was approved.
func heldErr(what, key string) error {
	return &jsonrpc.Error{Code: codeHeld, Message: fmt.Sprintf("%s is held: its definition changed upstream since it was approved, and reach does not serve it until an operator reviews the change. "+
		"Use another for now. An operator lets it through with `reach tools diff '%s'`, then `reach tools approve '%s'`.", what, key, key)}
}

// codeHeld is the JSON-RPC code of a refused get or read of a held prompt
// or resource: the code of the Guard's refusals.
const codeHeld = -32010

// promptHeld returns heldErr for the prompt (by exposed name) if it is
// held, else nil.
func (u *upstream) promptHeld(name string) error {
	key := PinKey("prompt", name)
	u.p.mirrorMu.Lock()
	_, held := u.mirrored.held[key]
	u.p.mirrorMu.Unlock()
	if held {
		return heldErr(fmt.Sprintf("Prompt %q", name), key)
	}
	return nil
}

// resourceHeld returns heldErr if the resource uri is held, or, when it is
// no resource the upstream listed, a held resource template of the
// upstream's matches it; else nil.
func (u *upstream) resourceHeld(uri string) error {
	u.p.mirrorMu.Lock()
	m := u.mirrored
	u.p.mirrorMu.Unlock()
	if len(m.held) == 0 {
		return nil
	}
	key := PinKey("resource", uri)
	if _, held := m.held[key]; held {
		return heldErr(fmt.Sprintf("Resource %q", uri), key)
	}
	if m.resources[uri] != nil {
		return nil
	}
	for k := range m.held {
		tmpl, ok := strings.CutPrefix(k, "resource_template:")
		if !ok {
			continue
		}
		if t, err := uritemplate.New(tmpl); err == nil && t.Match(uri) != nil {
			return heldErr(fmt.Sprintf("Resource %q (of the resource template %q)", uri, tmpl), k)
		}
	}
	return nil
}

// completionHeld returns heldErr when a completion is of a held prompt's
// arguments (prompt, by exposed name) or a held resource template's (uri,
// as written), else nil: what is held is not served, its arguments' values
// neither.
func (u *upstream) completionHeld(prompt, uri string) error {
	if prompt != "" {
		return u.promptHeld(prompt)
	}
	key := PinKey("resource_template", uri)
	u.p.mirrorMu.Lock()
	_, held := u.mirrored.held[key]
	u.p.mirrorMu.Unlock()
	if held {
		return heldErr(fmt.Sprintf("Resource template %q", uri), key)
	}
	return nil
}

// RecheckPins asks the Pinner again about the held prompts and resources,
// and serves again those it no longer holds (approved, or the upstream
// went back to the pinned definition): put on the server again, which
// tells its clients their list changed.
func (p *Pool) RecheckPins() {
	if p.pinner == nil {
		return
	}
	for _, u := range p.ups {
		p.mirrorMu.Lock()
		held := maps.Clone(u.mirrored.held)
		p.mirrorMu.Unlock()
		if len(held) == 0 {
			continue
		}
		still := p.pinner(u.cfg.Name, held, false)
		p.mirrorMu.Lock()
		// A new map, not deletes in place: readers (resourceHeld) range
		// over the map they took under the lock after letting go of it, as
		// mirror replaces it whole.
		kept := maps.Clone(u.mirrored.held)
		for key, def := range held {
			if still[key] || kept[key] != def {
				continue // still held, or mirrored anew meanwhile
			}
			delete(kept, key)
			switch d := def.(type) {
			case *mcp.Prompt:
				if u.mirrored.prompts[d.Name] == d {
					p.server.AddPrompt(d, u.getPrompt(strings.TrimPrefix(d.Name, u.prefix())))
				}
			case *mcp.Resource:
				if u.mirrored.resources[d.URI] == d {
					p.server.AddResource(d, u.readResource)
				}
			case *mcp.ResourceTemplate:
				if u.mirrored.templates[d.URITemplate] == d {
					p.server.AddResourceTemplate(d, u.readResource)
				}
			}
			u.log.Info("an approved prompt or resource definition is in force", "pin", key)
		}
		u.mirrored.held = kept
		p.mirrorMu.Unlock()
	}
}

// heldNow returns what the upstreams hold, by pin key, one map each (nil
// when none holds anything). The maps are not changed once put in place
// (mirror and RecheckPins replace them), so they are read without the lock.
func (p *Pool) heldNow() []map[string]any {
	p.mirrorMu.Lock()
	defer p.mirrorMu.Unlock()
	var all []map[string]any
	for _, u := range p.ups {
		if len(u.mirrored.held) > 0 {
			all = append(all, u.mirrored.held)
		}
	}
	return all
}

// listedUnheld is the gateway's server's middleware that leaves the held
// prompts, resources and resource templates out of their listings.
func (p *Pool) listedUnheld(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		all := p.heldNow() // one look for the whole listing
		if len(all) == 0 {
			return res, err
		}
		held := func(kind, name string) bool {
			key := PinKey(kind, name)
			for _, h := range all {
				if _, ok := h[key]; ok {
					return true
				}
			}
			return false
		}
		switch r := res.(type) {
		case *mcp.ListResourcesResult:
			out := *r
			out.Resources = slices.DeleteFunc(slices.Clone(r.Resources), func(x *mcp.Resource) bool { return held("resource", x.URI) })
			return &out, nil
		case *mcp.ListResourceTemplatesResult:
			out := *r
			out.ResourceTemplates = slices.DeleteFunc(slices.Clone(r.ResourceTemplates), func(x *mcp.ResourceTemplate) bool {
				return held("resource_template", x.URITemplate)
			})
			return &out, nil
		case *mcp.ListPromptsResult:
			out := *r
			out.Prompts = slices.DeleteFunc(slices.Clone(r.Prompts), func(x *mcp.Prompt) bool { return held("prompt", x.Name) })
			return &out, nil
		}
		return res, err
	}
}

// promptName reports whether a prompt's name, as exposed, is one reach
// mirrors: at most 128 bytes of UTF-8 without control or format characters.
// A prompt's name is shown as it is, to clients and their users (a slash
// command, say), and a right-to-left override in it shows it as another
// name, its upstream's prefix hidden at its end; unlike a tool's, a
// prompt's name may hold spaces and any letter.
func promptName(name string) bool { return shownName(name, 128) }

// shownName reports whether a name (or URI) shown as it is to clients is
// at most max bytes of UTF-8 without control or format characters.
func shownName(name string, max int) bool {
	if len(name) > max || !utf8.ValidString(name) {
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
	})
}

// Bounds of a mirrored resource's (or resource template's) URI and name,
// in bytes.
const (
	maxResourceURI  = 2048
	maxResourceName = 256
)

// unshownText says why a resource (or resource template) of the upstream, by
// its URI (or URI template) and name, is not mirrored, "" if it is: a URI
// or name longer than its bound or with control or format characters (a
// right-to-left override shows a name or URI as another to clients and
// their users, as it would a prompt's name), a URI that spells a
// registered secret (masked, it would name no resource the upstream
// has), or one the MCP server refuses to hold (parse: url.Parse, or the
// URI templates' parser), which it would have panicked on, taking the
// gateway down with it.
func unshownText[T any](u *upstream, uri, name string, parse func(string) (T, error)) string {
	switch {
	case uri == "":
		return "its URI is empty"
	case !shownName(uri, maxResourceURI):
		return fmt.Sprintf("its URI is longer than %d bytes or holds control or format characters", maxResourceURI)
	case !shownName(name, maxResourceName):
		return fmt.Sprintf("its name is longer than %d bytes or holds control or format characters", maxResourceName)
	case u.p.redactor.Spells(uri):
		return "its URI holds a registered secret"
	}
	if _, err := parse(uri); err != nil {
		return "its URI does not parse"
	}
	return ""
}

// otherMirror returns an upstream other than u whose mirror has what has
// says, or nil; p.mirrorMu is held.
func (p *Pool) otherMirror(u *upstream, has func(mirrored) bool) *upstream {
	for _, o := range p.ups {
		if o != u && has(o.mirrored) {
			return o
		}
	}
	return nil
}

// remirror mirrors the upstream again after it said its resources or
// prompts changed: one mirror at a time, and changes announced while one
// runs folded into one more (coalesce). It returns at once.
func (u *upstream) remirror() {
	u.coalesce(&u.mirroring, func() {
		select { // a change announced while the gateway is being built is seen by the build
		case <-u.p.ready:
		case <-u.p.life.Done():
			return
		}
		u.mirror(u.p.life)
	})
}

func (u *upstream) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if err := u.guarded(ctx, req, "read_resource", false, req.Params.URI); err != nil {
		return nil, err
	}
	if err := u.resourceHeld(req.Params.URI); err != nil {
		return nil, err
	}
	cs, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	return u.readOn(ctx, cs, req)
}

// readOn reads the resource of req on the upstream session cs, the
// guards passed, and masks what it read.
func (u *upstream) readOn(ctx context.Context, cs *mcp.ClientSession, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	p := *req.Params
	p.Meta = upstreamMeta(p.Meta)
	res, err := cs.ReadResource(ctx, &p)
	if err != nil {
		return nil, u.p.maskedErr(err)
	}
	// A null among the contents is no content: passed on, it crashed the
	// gateway's server, which reads each one.
	res.Contents = slices.DeleteFunc(res.Contents, func(c *mcp.ResourceContents) bool { return c == nil })
	res.Contents = u.readEmbedsAllowed(ctx, req, req.Params.URI, res.Contents)
	return answerMasked(res, u.p.redactor.Redact)
}

// readOwn is the gateway's server's receiving middleware that reads a
// resource the server does not know on the client's own upstream sessions
// (sessionFor), which serve that client alone. An upstream may make a
// resource for one session only and never list it on another, such as
// one a tool call made and linked to in its result (server-everything's
// gzip-file-as-resource, demo://resource/session/...): read through the
// shared session, which the mirror lists, a client that can sample or
// elicit, whose calls run on a session of its own, was answered that the
// resource it had just been given did not exist. The guards ask as for
// any read; the first answer that is not "not found" is the client's.
func (p *Pool) readOwn(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "resources/read" || !notFound(err) {
			return res, err
		}
		rr, ok := req.(*mcp.ReadResourceRequest)
		if !ok || rr.Session == nil || rr.Params == nil {
			return res, err
		}
		var refused error
		for _, u := range p.ups {
			v, ok := u.own.Load(rr.Session)
			if !ok {
				continue
			}
			if gerr := u.guarded(ctx, rr, "read_resource", false, rr.Params.URI); gerr != nil {
				refused = cmp.Or(refused, gerr)
				continue
			}
			if herr := u.resourceHeld(rr.Params.URI); herr != nil {
				refused = cmp.Or(refused, herr)
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, u.timeout())
			own, oerr := u.readOn(rctx, v.(*mcp.ClientSession), rr)
			cancel()
			if oerr == nil || !notFound(oerr) {
				return own, oerr
			}
		}
		if refused != nil {
			return nil, refused
		}
		return res, err
	}
}

// notFound reports whether err answers that a resource does not exist.
func notFound(err error) bool {
	je, ok := errors.AsType[*jsonrpc.Error](err)
	return ok && (je.Code == mcp.CodeResourceNotFound || je.Code == -32002) // -32002: its code before SEP-2164
}

// maskedOK returns v with mask applied to its JSON (v itself when that
// masks nothing), and whether it could be: ok is false, and v returned
// as it is, when v does not go to JSON, or when what mask made of it does
// not go back into a T: a secret spelled in a blob's base64 (or an image's
// data) is masked into what is no base64, and the rest of v, its texts
// with that secret in them, went on unmasked. Such a v is not passed on.
func maskedOK[T any](v *T, mask func([]byte) []byte) (*T, bool) {
	if v == nil {
		return v, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	m := mask(b)
	if len(m) == len(b) && (len(b) == 0 || &m[0] == &b[0]) { // nothing masked: the same bytes
		return v, true
	}
	var out T
	if json.Unmarshal(m, &out) != nil {
		return v, false
	}
	return &out, true
}

// unmaskableText says why what an upstream sent is not passed on:
// maskedOK could not mask it.
const unmaskableText = "it holds a configured secret where reach cannot mask it (in binary data, base64 in JSON)"

// answerMasked returns an upstream's answer to a read, a get or a
// completion masked, or, when it cannot be (maskedOK), an error that says
// so in its place: the answer is not passed on.
func answerMasked[T any](res *T, mask func([]byte) []byte) (*T, error) {
	m, ok := maskedOK(res, func(b []byte) []byte { return unforgedMeta(mask(b)) })
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "reach did not pass on the upstream's answer: " + unmaskableText + ". Ask the upstream's operator to keep the secret out of it, or ask for something else."}
	}
	return m, nil
}

// Reach's own _meta keys (reach/request, reach/frame, reach/status,
// reach/error, ...) are reach's word: a client links its calls by them and
// takes reach/status "refused" for reach's refusal. An upstream does not
// write them for reach: they are dropped from every _meta of what it
// answers (a read, a prompt, a completion, a log message, a resource's
// update), as an A2A agent's are.

// unforgedMeta returns b, an upstream's answer as encoding/json writes it
// (no key spelled with escapes), without the reach/ keys of its _meta
// objects, at any depth (the answer's, its contents', their
// annotations'); b itself when it has none.
func unforgedMeta(b []byte) []byte {
	if !bytes.Contains(b, []byte(`"reach/`)) {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || !dropReachKeys(v, false) {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// dropReachKeys deletes, in place, the reach/ keys of the objects in v
// that are the value of a _meta key (meta: v is one), and reports whether
// it deleted any.
func dropReachKeys(v any, meta bool) bool {
	dropped := false
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if meta && reachmeta.IsKey(k) {
				delete(x, k)
				dropped = true
				continue
			}
			dropped = dropReachKeys(c, k == "_meta") || dropped
		}
	case []any:
		for _, c := range x {
			dropped = dropReachKeys(c, false) || dropped
		}
	}
	return dropped
}

// withoutReachMeta returns m without reach's keys: m itself when it has
// none, else a copy.
func withoutReachMeta(m mcp.Meta) mcp.Meta { return reachmeta.Without(m) }

// maskedErr returns err with the secrets in its message (and a JSON-RPC
// error's data) masked, its JSON-RPC code kept.
func (p *Pool) maskedErr(err error) error {
	if we, ok := errors.AsType[*jsonrpc.Error](err); ok {
		c := *we
		c.Message = p.redactor.RedactString(c.Message)
		if len(c.Data) > 0 {
			c.Data = p.redactor.Redact(c.Data)
		}
		if c.Message != we.Message || len(c.Data) != len(we.Data) || (len(c.Data) > 0 && &c.Data[0] != &we.Data[0]) {
			return &c
		}
		return err
	}
	if m := p.redactor.RedactString(err.Error()); m != err.Error() {
		return errors.New(m)
	}
	return err
}

// upstreamMeta returns a client's _meta without the keys of its protocol
// (io.modelcontextprotocol/..., which name its protocol version, say): the
// gateway's session with the upstream has a protocol of its own, and an
// upstream refuses a request that names another. Nor the keys by which
// reach names a call's frame to an upstream (reach/..., traceparent,
// tracestate): an upstream's sampling request on a shared session goes to
// the client of the call its _meta names, and a client that named
// another principal's call in flight on a read would have the sampling
// the upstream does meanwhile, its _meta passed along, sent to that
// principal's client.
func upstreamMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") || reachmeta.IsKey(k) || k == "traceparent" || k == "tracestate" {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

func (u *upstream) getPrompt(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if err := u.guarded(ctx, req, "get_prompt", true, u.prefix()+name); err != nil {
			return nil, err
		}
		if err := u.promptHeld(u.prefix() + name); err != nil {
			return nil, err
		}
		cs, err := u.session(ctx)
		if err != nil {
			return nil, err
		}
		p := *req.Params
		p.Name = name
		p.Meta = upstreamMeta(p.Meta)
		res, err := cs.GetPrompt(ctx, &p)
		if err != nil {
			return nil, u.p.maskedErr(err)
		}
		res.Messages = slices.DeleteFunc(res.Messages, func(m *mcp.PromptMessage) bool { return m == nil }) // a null is no message
		u.promptEmbedsAllowed(ctx, req, res.Messages)
		return answerMasked(res, u.p.redactor.Redact)
	}
}

// upstreamsFor finds the upstreams a completion or subscription may be
// about: by a prompt's prefixed name, or every one for a resource.
func (p *Pool) upstreamsFor(prompt string) []*upstream {
	var out []*upstream
	for _, u := range p.ups {
		if prompt == "" || strings.HasPrefix(prompt, u.prefix()) {
			out = append(out, u)
		}
	}
	return out
}

// Complete forwards completion/complete to the upstream of the reference:
// the gateway's server's CompletionHandler.
func (p *Pool) Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	params := *req.Params
	params.Meta = upstreamMeta(params.Meta)
	prompt := ""
	if params.Ref != nil && params.Ref.Type == "ref/prompt" {
		prompt = params.Ref.Name
	}
	var last, refused error = errors.New("no upstream completes this reference"), nil
	for _, u := range p.upstreamsFor(prompt) {
		what := prompt
		if prompt == "" && params.Ref != nil {
			what = params.Ref.URI
		}
		if err := u.guarded(ctx, req, "complete", prompt != "", what); err != nil {
			refused = cmp.Or(refused, err)
			continue
		}
		if err := u.completionHeld(prompt, what); err != nil {
			refused = cmp.Or(refused, err)
			continue
		}
		cs, err := u.session(ctx)
		if err != nil {
			last = err
			continue
		}
		if c := cs.InitializeResult().Capabilities; c == nil || c.Completions == nil {
			continue
		}
		q := params
		if prompt != "" {
			ref := *params.Ref
			ref.Name = strings.TrimPrefix(prompt, u.prefix())
			q.Ref = &ref
		}
		res, err := cs.Complete(ctx, &q)
		if err == nil {
			u.completionsAllowed(ctx, req, &params, res)
			return answerMasked(res, p.redactor.Redact)
		}
		last = err
	}
	if refused != nil {
		return nil, refused
	}
	return nil, p.maskedErr(last)
}

// completionsAllowed leaves out of res, the upstream's completion of
// params, the values the client that sent req may not have: a value
// that names a resource it may not read, asked of the Guard as a read of
// that resource (for a resource template, the URI the template makes
// with the value and the arguments already given; for either reference,
// the value itself when it is a URI), and a value that holds a secret
// (masked, it completes nothing, and says there is one). The total the
// upstream counted is lowered by as many. Before, every value passed, and
// a completion listed the names of resources the client may not read.
func (u *upstream) completionsAllowed(ctx context.Context, req mcp.Request, params *mcp.CompleteParams, res *mcp.CompleteResult) {
	if res == nil || len(res.Completion.Values) == 0 {
		return
	}
	var tmpl *uritemplate.Template
	if params.Ref != nil && params.Ref.Type == "ref/resource" {
		tmpl, _ = uritemplate.New(params.Ref.URI)
	}
	n := len(res.Completion.Values)
	res.Completion.Values = slices.DeleteFunc(slices.Clone(res.Completion.Values), func(v string) bool {
		if u.p.redactor.RedactString(v) != v {
			return true
		}
		if u.p.guard == nil {
			return false
		}
		if tmpl != nil {
			vals := uritemplate.Values{}
			if params.Context != nil {
				for k, a := range params.Context.Arguments {
					vals.Set(k, uritemplate.String(a))
				}
			}
			vals.Set(params.Argument.Name, uritemplate.String(v))
			if uri, err := tmpl.Expand(vals); err != nil || u.guarded(ctx, req, "read_resource", false, uri) != nil {
				return true
			}
		}
		if r, err := url.Parse(v); err == nil && len(r.Scheme) > 1 {
			return u.guarded(ctx, req, "read_resource", false, v) != nil
		}
		return false
	})
	if dropped := n - len(res.Completion.Values); dropped > 0 && res.Completion.Total > 0 {
		res.Completion.Total = max(res.Completion.Total-dropped, len(res.Completion.Values))
	}
}

// Subscribe subscribes the upstream to a resource for a client: the
// gateway's server's SubscribeHandler. The upstream's session is shared: it is subscribed when the first client
// subscribes, and unsubscribed when the last one unsubscribes or leaves.
// The changes of one resource's subscriptions happen one at a time
// (lockURI, held across the upstream's answer, which the upstream's
// timeout bounds), so that an unsubscribe on its way never ends one that
// a subscribe just counted on; other resources' do not wait.
func (p *Pool) Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri, ss := req.Params.URI, req.Session
	defer p.lockURI(uri)()
	p.subMu.Lock()
	for _, u := range p.ups {
		if len(u.subs[uri]) > 0 {
			if err := u.guarded(ctx, req, "read_resource", false, uri); err != nil {
				p.subMu.Unlock()
				return err
			}
			if err := u.resourceHeld(uri); err != nil {
				p.subMu.Unlock()
				return err
			}
			u.addSubLocked(ctx, req, uri, ss)
			p.subMu.Unlock()
			return nil // the upstream sends this resource's updates already
		}
	}
	p.subMu.Unlock()
	return p.eachSubscribable(ctx, func(u *upstream, cs *mcp.ClientSession) (bool, error) {
		if err := u.guarded(ctx, req, "read_resource", false, uri); err != nil {
			return true, err
		}
		if err := u.resourceHeld(uri); err != nil {
			return true, err
		}
		sctx, cancel := context.WithTimeout(ctx, u.timeout())
		defer cancel()
		if err := cs.Subscribe(sctx, &mcp.SubscribeParams{Meta: upstreamMeta(req.Params.Meta), URI: uri}); err != nil {
			return false, err
		}
		p.subMu.Lock()
		u.addSubLocked(ctx, req, uri, ss)
		p.subMu.Unlock()
		return false, nil
	})
}

// Unsubscribe ends a client's subscription, and the upstream's when no
// other client has one: the gateway's server's UnsubscribeHandler.
func (p *Pool) Unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	defer p.lockURI(req.Params.URI)()
	if err := p.unsubscribeURI(ctx, req.Params.URI, req.Session, upstreamMeta(req.Params.Meta)); err != nil {
		return p.maskedErr(err) // the upstream's error, masked as its other answers are
	}
	return nil
}

// unsubscribeURI ends ss's subscription to uri; its lockURI is held.
func (p *Pool) unsubscribeURI(ctx context.Context, uri string, ss *mcp.ServerSession, meta mcp.Meta) error {
	p.subMu.Lock()
	var last *upstream
	for _, u := range p.ups {
		if !u.subs[uri][ss] {
			continue
		}
		delete(u.subs[uri], ss)
		delete(p.subAsked, subscribeKey{uri, ss})
		if len(u.subs[uri]) == 0 {
			delete(u.subs, uri)
			last = u
		}
		break
	}
	p.subMu.Unlock()
	if last == nil {
		return nil // it had no subscription to end, or other clients' stay
	}
	cs, err := last.session(ctx)
	if err != nil {
		return err
	}
	uctx, cancel := context.WithTimeout(ctx, last.timeout())
	defer cancel()
	return cs.Unsubscribe(uctx, &mcp.UnsubscribeParams{Meta: meta, URI: uri})
}

// lockURI serializes the subscription changes of one resource: it waits
// for the others' to end and returns the unlock.
func (p *Pool) lockURI(uri string) func() {
	p.subMu.Lock()
	l := p.uriLocks[uri]
	if l == nil {
		if p.uriLocks == nil {
			p.uriLocks = map[string]*uriLock{}
		}
		l = &uriLock{}
		p.uriLocks[uri] = l
	}
	l.refs++
	p.subMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		p.subMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(p.uriLocks, uri)
		}
		p.subMu.Unlock()
	}
}

type uriLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; guarded by p.subMu
}

// endForbiddenSubs ends the subscriptions to uri, through u, of the
// clients the Guard no longer lets read it (a policy reload forbade it
// since they subscribed, their key was revoked): asked again, as each
// client that subscribed, before an update of uri is passed on. Each such
// client is unsubscribed (the upstream too, when it was the last) and
// told so by a log message (at level warning, if it asked for log
// messages) with the Guard's refusal; updatesOfSubscribed keeps the
// update from it. Before, a subscription outlived the policy that allowed
// it, and every update of the resource reached the client.
func (u *upstream) endForbiddenSubs(uri string) {
	p := u.p
	if p.guard == nil {
		return
	}
	type sub struct {
		ss *mcp.ServerSession
		a  asker
	}
	var subs []sub
	p.subMu.Lock()
	for ss := range u.subs[uri] {
		subs = append(subs, sub{ss, p.subAsked[subscribeKey{uri, ss}]})
	}
	p.subMu.Unlock()
	for _, s := range subs {
		ctx := s.a.ctx
		if ctx == nil {
			ctx = p.life
		}
		err := u.guarded(ctx, s.a.req, "read_resource", false, uri)
		if err == nil {
			continue
		}
		unlock := p.lockURI(uri)
		if uerr := p.unsubscribeURI(p.life, uri, s.ss, nil); uerr != nil {
			u.log.Debug("unsubscribing the upstream from a resource no client may read any more failed", "uri", uri, "err", uerr)
		}
		unlock()
		msg := err.Error()
		if je, ok := errors.AsType[*jsonrpc.Error](err); ok {
			msg = je.Message
		}
		lctx, cancel := context.WithTimeout(p.life, u.timeout())
		s.ss.Log(lctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "reach",
			Data: p.redactor.RedactString(fmt.Sprintf("reach ended your subscription to %q: you may no longer read it (%s). Subscribe again once a policy allows it.", uri, msg))})
		cancel()
	}
}

// subscribed reports whether ss has a subscription to uri through any
// upstream.
func (p *Pool) subscribed(uri string, ss *mcp.ServerSession) bool {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	for _, u := range p.ups {
		if u.subs[uri][ss] {
			return true
		}
	}
	return false
}

// updatesOfSubscribed is the gateway's server's sending middleware that
// passes an update of a resource on only to a client that is subscribed
// to it here: the server keeps subscriptions of its own, which reach
// cannot end but by the client's unsubscribe, and would otherwise send
// updates to a client whose subscription reach ended (endForbiddenSubs).
func (p *Pool) updatesOfSubscribed(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "notifications/resources/updated" {
			return next(ctx, method, req)
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		params, pok := req.GetParams().(*mcp.ResourceUpdatedNotificationParams)
		if ok && pok && params != nil && !p.subscribed(params.URI, ss) {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// subscribeKey is one client's subscription to one resource.
type subscribeKey struct {
	uri string
	ss  *mcp.ServerSession
}

// asker is who asked for a subscription, for the Guard: the subscribe
// request and its context's values (who sent it), not its end.
type asker struct {
	ctx context.Context
	req mcp.Request
}

// addSubLocked records that ss subscribed to uri through u, by the
// request req (in ctx); p.subMu is held. The first subscription of a
// client starts the one watcher that ends its subscriptions when it
// leaves.
func (u *upstream) addSubLocked(ctx context.Context, req mcp.Request, uri string, ss *mcp.ServerSession) {
	p := u.p
	if p.guard != nil {
		if p.subAsked == nil {
			p.subAsked = map[subscribeKey]asker{}
		}
		p.subAsked[subscribeKey{uri, ss}] = asker{context.WithoutCancel(ctx), req}
	}
	if u.subs == nil {
		u.subs = map[string]map[*mcp.ServerSession]bool{}
	}
	if u.subs[uri] == nil {
		u.subs[uri] = map[*mcp.ServerSession]bool{}
	}
	u.subs[uri][ss] = true
	if p.subWatched == nil {
		p.subWatched = map[*mcp.ServerSession]bool{}
	}
	if p.subWatched[ss] {
		return
	}
	p.subWatched[ss] = true
	go func() {
		ss.Wait()
		p.subMu.Lock()
		delete(p.subWatched, ss)
		var uris []string
		for _, u := range p.ups {
			for uri, by := range u.subs {
				if by[ss] {
					uris = append(uris, uri)
				}
			}
		}
		p.subMu.Unlock()
		for _, uri := range uris {
			unlock := p.lockURI(uri)
			p.unsubscribeURI(p.life, uri, ss, nil)
			unlock()
		}
	}()
}

// resubscribe subscribes a new session of the upstream (after a restart)
// to the resources its clients are subscribed to: the old session's
// subscriptions went with it.
func (u *upstream) resubscribe(cs *mcp.ClientSession) {
	p := u.p
	p.subMu.Lock()
	uris := slices.Collect(maps.Keys(u.subs))
	p.subMu.Unlock()
	for _, uri := range uris {
		unlock := p.lockURI(uri)
		p.subMu.Lock()
		still := len(u.subs[uri]) > 0
		p.subMu.Unlock()
		if still {
			ctx, cancel := context.WithTimeout(p.life, u.timeout())
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				u.log.Warn("subscribing the new session again failed; its clients get no updates of the resource", "uri", uri, "err", err)
			}
			cancel()
		}
		unlock()
	}
}

// eachSubscribable tries f on every upstream that takes resource
// subscriptions, until one succeeds. f reports whether its error is a
// refusal (the guard's): the first refusal is returned over any upstream's
// error, as Complete does, so that a client learns it was refused and not
// that a later upstream failed; an upstream's error is masked.
func (p *Pool) eachSubscribable(ctx context.Context, f func(*upstream, *mcp.ClientSession) (refusal bool, err error)) error {
	var last, refused error = errors.New("no upstream serves this resource"), nil
	for _, u := range p.ups {
		cs, err := u.session(ctx)
		if err != nil {
			last = err
			continue
		}
		if c := cs.InitializeResult().Capabilities; c == nil || c.Resources == nil || !c.Resources.Subscribe {
			continue
		}
		r, err := f(u, cs)
		if err == nil {
			return nil
		}
		if r {
			refused = cmp.Or(refused, err)
		} else {
			last = err
		}
	}
	if refused != nil {
		return refused
	}
	return p.maskedErr(last)
}

// capabilities returns what the upstream declared, if it is connected.
func (u *upstream) capabilities() *mcp.ServerCapabilities {
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs == nil || cs.InitializeResult() == nil {
		return nil
	}
	return cs.InitializeResult().Capabilities
}

// Embedded resources. An upstream may put a resource's contents into what
// it answers besides a read of it: an embedded resource (type "resource")
// in a tool's result or a prompt's messages, or contents under another URI
// than the one read (a folder's read answering with its files). Each is
// asked of the Guard as a read of its URI is, for the principal of the
// call (or of the client that got the prompt or read), and one the Guard
// refuses is left out: in a result or a prompt, a text block in its place
// says which resource and why; among a read's contents it is dropped. A
// link (type "resource_link") passes: it carries no contents, and reading
// it is a read the Guard is asked about.

// embedRefused returns the text that stands in for a resource the Guard
// refused to embed, masked.
func (u *upstream) embedRefused(uri string, err error) string {
	msg := err.Error()
	if je, ok := errors.AsType[*jsonrpc.Error](err); ok {
		msg = je.Message
	}
	return u.p.redactor.RedactString(fmt.Sprintf("[reach left out the resource %q that the upstream embedded here: %s]", uri, msg))
}

// embedsAllowed returns cs with each embedded resource the Guard refuses
// replaced by a text block saying so; cs itself when none is.
func (u *upstream) embedsAllowed(ctx context.Context, req mcp.Request, cs []mcp.Content) []mcp.Content {
	if u.p.guard == nil {
		return cs
	}
	var out []mcp.Content
	for i, c := range cs {
		e, ok := c.(*mcp.EmbeddedResource)
		if !ok || e.Resource == nil {
			continue
		}
		if err := u.guarded(ctx, req, "read_resource", false, e.Resource.URI); err != nil {
			if out == nil {
				out = slices.Clone(cs)
			}
			out[i] = &mcp.TextContent{Text: u.embedRefused(e.Resource.URI, err)}
		}
	}
	if out == nil {
		return cs
	}
	return out
}

// embedsAllowedWire is embedsAllowed for the content blocks of a result
// read off the wire, as they came.
func (u *upstream) embedsAllowedWire(ctx context.Context, cs []json.RawMessage) []json.RawMessage {
	if u.p.guard == nil {
		return cs
	}
	var out []json.RawMessage
	for i, c := range cs {
		// A block that names no resource is not read again; one with an
		// escape may spell its type so.
		if !bytes.Contains(c, []byte("resource")) && bytes.IndexByte(c, '\\') < 0 {
			continue
		}
		var probe struct {
			Type     string `json:"type"`
			Resource *struct {
				URI string `json:"uri"`
			} `json:"resource"`
		}
		if json.Unmarshal(c, &probe) != nil || probe.Type != "resource" || probe.Resource == nil {
			continue
		}
		if err := u.guarded(ctx, nil, "read_resource", false, probe.Resource.URI); err != nil {
			if out == nil {
				out = slices.Clone(cs)
			}
			out[i], _ = json.Marshal(&mcp.TextContent{Text: u.embedRefused(probe.Resource.URI, err)})
		}
	}
	if out == nil {
		return cs
	}
	return out
}

// promptEmbedsAllowed is embedsAllowed for a prompt's messages.
func (u *upstream) promptEmbedsAllowed(ctx context.Context, req mcp.Request, ms []*mcp.PromptMessage) {
	if u.p.guard == nil {
		return
	}
	for _, m := range ms {
		m.Content = u.embedsAllowed(ctx, req, []mcp.Content{m.Content})[0]
	}
}

// readEmbedsAllowed returns the contents of a read of uri without those
// under another URI that the Guard refuses.
func (u *upstream) readEmbedsAllowed(ctx context.Context, req mcp.Request, uri string, cs []*mcp.ResourceContents) []*mcp.ResourceContents {
	if u.p.guard == nil {
		return cs
	}
	return slices.DeleteFunc(cs, func(c *mcp.ResourceContents) bool {
		if c.URI == uri {
			return false
		}
		return u.guarded(ctx, req, "read_resource", false, c.URI) != nil
	})
}

// samplingEmbedsAllowed is embedsAllowed for the tool results among a
// sampling request's messages (an upstream that samples with tools sends
// the results of its own tools), for the principal of the call in ctx.
func (u *upstream) samplingEmbedsAllowed(ctx context.Context, ms []*mcp.SamplingMessage) {
	if u.p.guard == nil {
		return
	}
	for _, m := range ms {
		if tr, ok := m.Content.(*mcp.ToolResultContent); ok {
			tr.Content = u.embedsAllowed(ctx, nil, tr.Content)
		}
	}
}
