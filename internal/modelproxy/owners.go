package modelproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
// older than Options.Kept. A conversation reach cannot place: it does not
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

// ownerMemory holds the owners of the newest answers, so that a turn after
// one of them reads no store. The zero value is ready.
type ownerMemory struct {
	mu    sync.Mutex
	m     map[string]*store.ResponseOwner
	order []string // the keys of m, oldest first
}

func (o *ownerMemory) put(r *store.ResponseOwner) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]*store.ResponseOwner{}
	}
	if _, ok := o.m[r.Hash]; !ok {
		o.order = append(o.order, r.Hash)
	}
	o.m[r.Hash] = r
	for len(o.order) > maxOwners {
		delete(o.m, o.order[0])
		o.order = o.order[1:]
	}
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
	p.owners.put(r)
	if p.opts.Owners == nil {
		return
	}
	err := p.opts.Owners.PutResponseOwner(context.WithoutCancel(ctx), r)
	if err != nil {
		// The answer goes on: the newest answers are known in memory too.
		p.log.Error("recording the owner of a Responses API answer failed: after a restart, a turn that names it is refused", "principal", principal, "err", err)
	}
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
// whether the turn may go on, and the record of the answer it names, if
// any.
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
	if prev == "" {
		return nil, true
	}
	o, err := p.owned(r.Context(), prev, who)
	if err != nil {
		p.log.Error("reading the owner of a Responses API answer failed", "err", err)
		w.Header().Set("X-Should-Retry", "true") // nothing was decided: the same turn may pass in a moment
		w.Header().Set("Retry-After", "1")
		proxyError(w, http.StatusServiceUnavailable, "server_error", "owner_unavailable",
			"reach could not read whose answer previous_response_id names, and does not send a turn it may not own. Try again.")
		return nil, false
	}
	if o == nil {
		principal, _ := owner(who)
		refuseHistory(w, "previous_response_id", "previous_response_not_found",
			fmt.Sprintf("Previous response with id %q not found for principal %q: reach gave no such answer to you (it may be another principal's, made elsewhere, or older than %s). "+
				"Name an answer reach gave you, or send the conversation's items in input instead of previous_response_id.", p.redact([]byte(prev)), principal, keptText(p.opts.Kept)))
		return nil, false
	}
	return o, true
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

// keeping returns the endpoints a turn may be sent to: all of them, unless
// it names an answer (previous_response_id), whose history only the
// endpoint that gave it keeps (o's, or the model's when o is nil: the
// client's own key) and those on the same account (the same URL and key,
// another model). A fallback elsewhere would answer that it knows no such
// answer, a 4xx the client cannot mend, so it is not asked.
func (p *Proxy) keeping(body map[string]json.RawMessage, o *store.ResponseOwner) []*endpoint {
	var prev string
	json.Unmarshal(body["previous_response_id"], &prev)
	if prev == "" || len(p.eps) == 0 {
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
	var eps []*endpoint
	for _, ep := range p.eps {
		if ep == gave || ep.resp == gave.resp && ep.key.Reveal() == gave.key.Reveal() {
			eps = append(eps, ep)
		}
	}
	return eps
}
