package modelproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/httpjson"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/store"
)

// A Responses API turn may name history the endpoint keeps: an earlier
// answer (previous_response_id) or a conversation. The endpoint keeps it
// for the key it was asked with, and the model's key is the gateway's,
// one for all its principals: asked with an answer's id, it goes on with
// that conversation for whoever names it. So the proxy answers for the
// endpoint: each answer it passes on is recorded as its principal's
// (Options.Owners: durably, before the id reaches the client, so that no
// crash gives a client an id reach does not know), and a turn that names
// an answer reach did not give its principal is refused, whether another
// principal's, made elsewhere (with the provider's key, directly), or
// older than Options.Kept. An id's first owner keeps it: an endpoint that
// answers another principal with it does not hand it over (tookOver). A conversation reach cannot place: it does not
// serve the Conversations API that makes one, so a turn naming one is
// refused. None of this holds when the client's own key is what the
// endpoint gets (ownKey): the endpoint checks that key itself.

// Owners keeps who each Responses API answer belongs to: a store.Store.
type Owners interface {
	PutResponseOwner(ctx context.Context, r *store.ResponseOwner) error
	GetResponseOwner(ctx context.Context, hash string) (*store.ResponseOwner, error)
}

// DefaultKept is how long the owner of an answer is kept when
// Options.Kept is zero.
const DefaultKept = 30 * 24 * time.Hour

// ownKey reports whether the model's endpoint is asked with the client's
// own key: the configured model has none, and the gateway authenticates
// nobody, so the client's Authorization goes on.
func (p *Proxy) ownKey(r *http.Request) bool {
	return p.opts.Model.APIKey.Reveal() == "" && !p.opts.Authenticates && r.Header.Get("Authorization") != ""
}

// owner returns the principal and tenant an answer to who belongs to, as
// link.CheckOwner names them.
func owner(who *auth.Identity) (principal, tenant string) {
	if who == nil {
		return link.LocalPrincipal, ""
	}
	return who.Principal, who.Tenant
}

// idHash is the SHA-256 of an answer's id, as its owner is stored.
func idHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// maxOwners bounds the owners of answers the proxy keeps in memory.
const maxOwners = 10000

// ownerMemory holds the owners of answers, so that a turn after one of
// them reads no store: the newest maxOwners, kept per principal. Past the
// bound the oldest answer of the principal holding the most goes, so that
// one principal's flood of turns pushes out its own, not another's (whose
// next turn, without a store, was then refused previous_response_not_found).
// The zero value is ready.
type ownerMemory struct {
	mu    sync.Mutex
	m     map[string]*store.ResponseOwner
	order map[ownerKey][]string // each principal's keys of m, oldest first
}

type ownerKey struct{ principal, tenant string }

// put records r, unless another principal holds an unexpired record of
// its id: that is kept (the first writer's), and put reports false.
func (o *ownerMemory) put(r *store.ResponseOwner) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m, o.order = map[string]*store.ResponseOwner{}, map[ownerKey][]string{}
	}
	if had, ok := o.m[r.Hash]; !ok {
		k := ownerKey{r.Principal, r.Tenant}
		o.order[k] = append(o.order[k], r.Hash)
	} else if had.Principal != r.Principal || had.Tenant != r.Tenant {
		if r.Created.Before(had.Expires) {
			return false
		}
		// Expired: the id is the new principal's, in its order.
		ho := ownerKey{had.Principal, had.Tenant}
		hs := o.order[ho]
		for i, h := range hs {
			if h == r.Hash {
				hs = append(hs[:i:i], hs[i+1:]...)
				break
			}
		}
		if len(hs) == 0 {
			delete(o.order, ho)
		} else {
			o.order[ho] = hs
		}
		k := ownerKey{r.Principal, r.Tenant}
		o.order[k] = append(o.order[k], r.Hash)
	}
	o.m[r.Hash] = r
	for len(o.m) > maxOwners {
		var top ownerKey
		most := 0
		for k, hs := range o.order {
			if len(hs) > most {
				top, most = k, len(hs)
			}
		}
		if most == 0 {
			break
		}
		hs := o.order[top]
		delete(o.m, hs[0])
		if len(hs) == 1 {
			delete(o.order, top)
		} else {
			o.order[top] = hs[1:]
		}
	}
	return true
}

func (o *ownerMemory) get(hash string) *store.ResponseOwner {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[hash]
}

// recordOwner records that the answer id, which ep gave, is who's:
// durably when the proxy has Owners. It is called before the id is passed
// on.
func (p *Proxy) recordOwner(ctx context.Context, id string, who *auth.Identity, ep *endpoint) {
	principal, tenant := owner(who)
	now := time.Now()
	r := &store.ResponseOwner{Hash: idHash(id), Principal: principal, Tenant: tenant, Endpoint: ep.name, Created: now, Expires: now.Add(p.opts.Kept)}
	if p.opts.Owners != nil {
		err := p.opts.Owners.PutResponseOwner(context.WithoutCancel(ctx), r)
		if errors.Is(err, store.ErrConflict) {
			p.tookOver(principal, ep)
			return
		}
		if err != nil {
			// The answer goes on: the newest answers are known in memory too.
			p.log.Error("recording the owner of a Responses API answer failed: after a restart, a turn that names it is refused", "principal", principal, "err", err)
		}
	}
	if !p.owners.put(r) {
		p.tookOver(principal, ep)
	}
}

// tookOver logs an answer whose id another principal already owns: the
// endpoint gave it twice (a buggy or hostile one). The first owner keeps
// it (its next turn goes on); the answer is passed on, as the endpoint
// made it for this turn, but its id stays the other principal's, so a
// turn of this principal that names it is refused. The id is not logged:
// it would let a reader of the log name the other's history.
func (p *Proxy) tookOver(principal string, ep *endpoint) {
	p.log.Warn("a model endpoint answered with an id another principal already owns: it stays theirs, and this principal cannot go on from it", "principal", principal, "endpoint", ep.name)
}

// owned returns the record of the answer id when it was given to who
// through this proxy (or another instance on its store) and is not older
// than Kept, else nil.
func (p *Proxy) owned(ctx context.Context, id string, who *auth.Identity) (*store.ResponseOwner, error) {
	h := idHash(id)
	o := p.owners.get(h)
	if o == nil && p.opts.Owners != nil {
		var err error
		o, err = p.opts.Owners.GetResponseOwner(ctx, h)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	principal, tenant := owner(who)
	if o == nil || o.Principal != principal || o.Tenant != tenant || !time.Now().Before(o.Expires) {
		return nil, nil
	}
	return o, nil
}

// checkHistory refuses a Responses API turn that names history its
// principal does not own (see above), writing the error; it reports
// whether the turn may go on, and the record of the answer it names, or
// else of the first item it names, if any.
func (p *Proxy) checkHistory(w http.ResponseWriter, r *http.Request, body map[string]json.RawMessage, who *auth.Identity) (*store.ResponseOwner, bool) {
	if conv, ok := body["conversation"]; ok && string(conv) != "null" {
		var id string
		if json.Unmarshal(conv, &id) != nil {
			var c struct {
				ID string `json:"id"`
			}
			json.Unmarshal(conv, &c)
			id = c.ID
		}
		refuseHistory(w, "conversation", "conversation_unsupported",
			fmt.Sprintf("reach cannot tell whose conversation %q is: the model endpoint keeps conversations for the gateway's key, which all its principals share, and reach does not serve the Conversations API that makes them. "+
				"Name the answer you go on from instead (previous_response_id, an answer reach gave you), or send the conversation's items in input.", p.redact([]byte(id))))
		return nil, false
	}
	var prev string
	json.Unmarshal(body["previous_response_id"], &prev)
	var o *store.ResponseOwner
	principal, _ := owner(who)
	if prev != "" {
		var err error
		if o, err = p.owned(r.Context(), prev, who); err != nil {
			p.ownerUnreadable(w, err, "previous_response_id names")
			return nil, false
		}
		if o == nil {
			refuseHistory(w, "previous_response_id", "previous_response_not_found",
				fmt.Sprintf("Previous response with id %q not found for principal %q: reach gave no such answer to you (it may be another principal's, made elsewhere, or older than %s). "+
					"Name an answer reach gave you, or send the conversation's items in input instead of previous_response_id.", p.redact([]byte(prev)), principal, keptText(p.opts.Kept)))
			return nil, false
		}
	}
	var first *store.ResponseOwner // of the items, the first kept by the endpoint alone, else the first
	var firstStored bool
	for _, in := range itemIDs(body["input"]) {
		id := in.id
		it, err := p.owned(r.Context(), id, who)
		if err != nil {
			p.ownerUnreadable(w, err, "an input item names")
			return nil, false
		}
		if it == nil {
			refuseHistory(w, "input", "item_not_found",
				fmt.Sprintf("Item with id %q not found for principal %q: reach gave no such item to you (it may be another principal's, made elsewhere, or older than %s), and the endpoint would read it from what it stored under that id. "+
					"Send the item's content without its id (an item_reference: the item itself), or name only items of answers reach gave you.", p.redact([]byte(id)), principal, keptText(p.opts.Kept)))
			return nil, false
		}
		if first == nil || in.stored && !firstStored {
			first, firstStored = it, in.stored
		}
	}
	for _, id := range containerIDs(body["tools"]) {
		c, err := p.owned(r.Context(), id, who)
		if err != nil {
			p.ownerUnreadable(w, err, "a code interpreter's container names")
			return nil, false
		}
		if c == nil {
			refuseHistory(w, "tools", "container_not_found",
				fmt.Sprintf("Container with id %q not found for principal %q: reach gave no answer that ran code in it to you (it may be another principal's, made elsewhere, or older than %s), and the code would run among its files. "+
					`Ask for a new container ({"type": "auto"}), or name one an answer reach gave you ran code in.`, p.redact([]byte(id)), principal, keptText(p.opts.Kept)))
			return nil, false
		}
	}
	if param, k, m := itemCaseTwin(body); k != "" {
		refuseHistory(w, param, "unknown_parameter", fmt.Sprintf("Unrecognized member %q in an item of %s. Spell it %q.", k, param, m))
		return nil, false
	}
	if o == nil { // the endpoint that gave the items, as an answer's
		o = first
	}
	return o, true
}

// ownerUnreadable answers a turn whose owner could not be read: 503,
// retried, as nothing was decided.
func (p *Proxy) ownerUnreadable(w http.ResponseWriter, err error, what string) {
	p.log.Error("reading the owner of a Responses API answer failed", "err", err)
	w.Header().Set("X-Should-Retry", "true") // nothing was decided: the same turn may pass in a moment
	w.Header().Set("Retry-After", "1")
	proxyError(w, http.StatusServiceUnavailable, "server_error", "owner_unavailable",
		"reach could not read whose answer "+what+", and does not send a turn it may not own. Try again.")
}

// inputID is the id an item of a turn's input carries; stored, when the
// endpoint can read the item from what it stored under that id only (an
// item_reference, which has no type or that one; a reasoning item without
// its encrypted content), not from the item as sent.
type inputID struct {
	id     string
	stored bool
}

// itemIDs returns the ids the items of a turn's input carry. The
// endpoint reads an item that carries one from what it stored under that
// id, for the gateway's key (an item_reference is nothing else; a
// reasoning item without its content is read whole): an item's id names
// an answer as previous_response_id does. Keys are read as spelled (a
// map; a struct's fields match any case), as the endpoint reads them.
func itemIDs(input json.RawMessage) []inputID {
	var items []json.RawMessage
	if json.Unmarshal(input, &items) != nil { // a string, or nothing
		return nil
	}
	var ids []inputID
	for _, it := range items {
		var m map[string]json.RawMessage
		var id, typ string
		if json.Unmarshal(it, &m) != nil || json.Unmarshal(m["id"], &id) != nil || id == "" {
			continue
		}
		json.Unmarshal(m["type"], &typ)
		var enc string
		json.Unmarshal(m["encrypted_content"], &enc)
		ids = append(ids, inputID{id, typ == "" || typ == "item_reference" || typ == "reasoning" && enc == ""})
	}
	return ids
}

// itemCaseTwin finds a member of an input item (id, type,
// encrypted_content) or of a tool (type, container) that reach reads,
// spelled in another case ("ID", "Container"; Unicode's folds too): reach,
// reading keys as spelled, does not see it, and checks no owner, while a
// server in Go (decoding the body into structs with encoding/json) reads
// it as that member. It returns the body's member that holds it, the key
// and the member it stands for.
func itemCaseTwin(body map[string]json.RawMessage) (param, key, member string) {
	for _, c := range []struct {
		param   string
		members []string
	}{{"input", []string{"id", "type", "encrypted_content"}}, {"tools", []string{"type", "container"}}} {
		var raws []json.RawMessage
		json.Unmarshal(body[c.param], &raws) // a string, or nothing: none
		for _, r := range raws {
			var m map[string]json.RawMessage
			json.Unmarshal(r, &m) // not an object: the endpoint refuses it
			for k := range m {
				for _, mem := range c.members {
					if k != mem && strings.EqualFold(k, mem) {
						return c.param, k, mem
					}
				}
			}
		}
	}
	return "", "", ""
}

// containerIDs returns the containers the code interpreter tools of a
// turn name by their id (a string; {"type": "auto"} asks for a new one):
// the code runs among the files the endpoint keeps there, for the
// gateway's key.
func containerIDs(tools json.RawMessage) []string {
	var ts []json.RawMessage
	if json.Unmarshal(tools, &ts) != nil {
		return nil
	}
	var ids []string
	for _, t := range ts {
		var m map[string]json.RawMessage
		var typ, id string
		if json.Unmarshal(t, &m) == nil && json.Unmarshal(m["type"], &typ) == nil && typ == "code_interpreter" &&
			json.Unmarshal(m["container"], &id) == nil && id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// refuseHistory writes a 400 that the SDKs do not retry, naming the
// parameter, as the endpoint's own answer for an unknown id does.
func refuseHistory(w http.ResponseWriter, param, code, msg string) {
	w.Header().Set("X-Should-Retry", "false")
	httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": code, "param": param}})
}

// keptText spells d in days when it is whole days.
func keptText(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// keeping returns the endpoints a turn may be sent to, in order: all of
// them, unless it names an answer (previous_response_id) or an item read
// from what the endpoint stored (an item_reference), whose history only
// the endpoint that gave it keeps (o's, or the model's when o is nil: the
// client's own key) and those on the same account (the same URL and key,
// another model). A fallback elsewhere would answer that it knows no
// such answer, a 4xx the client cannot mend, so it is not asked. A turn
// whose items carry ids and their content (o, read from its first item)
// goes to the endpoint that gave them first, then to the others, which
// may answer from the content.
func (p *Proxy) keeping(body map[string]json.RawMessage, o *store.ResponseOwner) []*endpoint {
	var prev string
	json.Unmarshal(body["previous_response_id"], &prev)
	kept := prev != ""
	for _, in := range itemIDs(body["input"]) {
		kept = kept || in.stored
	}
	if !kept && o == nil || len(p.eps) == 0 {
		return p.eps
	}
	gave := p.eps[0]
	if o != nil {
		for _, ep := range p.eps {
			if ep.name == o.Endpoint {
				gave = ep
				break
			}
		}
	}
	var eps, rest []*endpoint
	for _, ep := range p.eps {
		if ep == gave || ep.resp == gave.resp && ep.key.Reveal() == gave.key.Reveal() {
			eps = append(eps, ep)
		} else if !kept {
			rest = append(rest, ep)
		}
	}
	return append(eps, rest...)
}
