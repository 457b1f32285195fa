package link

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/auth"
	"github.com/agentreach/reach/internal/callgraph"
)

// ModelChoices maps the ids of the tool calls models chose (through the model
// proxy) to their model frames, keeping 10,000 ids, so that a
// call the agent then sends with that id (call_id, or "reach/call_id"
// _meta) becomes the model frame's child. Model endpoints do not promise
// ids unique across conversations ("call_0" each time, say), so an id
// keeps the newest frame of each request whose model chose it (a few at
// most): a call that names its request links within it; one that names
// none links only if one running request's model chose that id, so that
// one agent's call never runs in another's request. Each of the three
// memories (ids, arguments, Responses answers) is kept per principal: only
// a principal's own turns are ever found for it, and past a memory's bound
// the oldest entry of the principal holding the most goes, so that one
// principal's flood pushes out its own, not another's (a call then unlinked
// runs apart from its turns: its budget and loop guard see half the run).
// The zero ModelChoices is ready; its methods are safe for concurrent use.
type ModelChoices struct {
	mu    sync.Mutex
	max   int // ids kept; 0 means 10,000
	m     map[ownKey][]*reach.Frame
	order perOwner

	maxArgs  int                  // choices kept by their arguments; 0 means maxChoices
	byArgs   map[ownKey][]*choice // owner, ArgsKey -> the choices of a call with those arguments
	argOrder perOwner             // counts choices

	maxResp   int                     // answers kept; 0 means maxResponses
	responses map[ownKey]*reach.Frame // owner, a Responses API answer's id -> the turn that gave it
	respOrder perOwner

	maxTasks  int                  // choices kept by their string arguments; 0 means maxChoices
	byTask    map[ownKey][]*choice // owner, a string argument -> the choices of a call given it
	taskOrder perOwner
}

// ownKey is a key of one owner's.
type ownKey struct {
	owner Owner
	key   string
}

// frameOwner is who owns the request f runs in.
func frameOwner(f *reach.Frame) Owner {
	root := f.Request.Root()
	return Owner{Principal: root.Principal(), Tenant: root.Tenant()}
}

// perOwner keeps the keys of a memory each owner holds, oldest first, and
// how many entries each holds (a key may hold several).
type perOwner struct {
	keys  map[Owner][]string
	held  map[Owner]int
	total int
}

// add records n more entries of o's, under key if it is new.
func (p *perOwner) add(o Owner, key string, isNew bool, n int) {
	if p.keys == nil {
		p.keys, p.held = map[Owner][]string{}, map[Owner]int{}
	}
	if isNew {
		p.keys[o] = append(p.keys[o], key)
	}
	p.held[o] += n
	p.total += n
}

// drop records that o holds n fewer entries (a key kept).
func (p *perOwner) drop(o Owner, n int) {
	if n == 0 {
		return
	}
	p.held[o] -= n
	p.total -= n
}

// oldest removes and returns the oldest key of the owner who holds the
// most entries; the caller deletes it and drops its entries.
func (p *perOwner) oldest() (ownKey, bool) {
	var top Owner
	most := -1
	for o, n := range p.held {
		if n > most && len(p.keys[o]) > 0 {
			top, most = o, n
		}
	}
	if most < 0 {
		return ownKey{}, false
	}
	ks := p.keys[top]
	k := ks[0]
	if len(ks) == 1 {
		delete(p.keys, top)
	} else {
		p.keys[top] = ks[1:]
	}
	return ownKey{top, k}, true
}

// trim takes the oldest key of the owner who holds the most, as long as
// more than most entries are held: remove deletes it where it is kept and
// says how many entries it held.
func (p *perOwner) trim(most int, remove func(ownKey) int) {
	for p.total > most {
		old, ok := p.oldest()
		if !ok {
			return
		}
		p.drop(old.owner, remove(old))
		p.forgetOwner(old.owner)
	}
}

// forgetOwner drops an owner who holds nothing.
func (p *perOwner) forgetOwner(o Owner) {
	if p.held[o] <= 0 && len(p.keys[o]) == 0 {
		delete(p.held, o)
	}
}

// maxChosenPerID bounds the requests remembered for one tool call id.
const maxChosenPerID = 8

// Record records that the model turn f chose the tool call id.
func (c *ModelChoices) Record(id string, f *reach.Frame) {
	if id == "" {
		return
	}
	o := frameOwner(f)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[ownKey][]*reach.Frame{}
		if c.max == 0 {
			c.max = 10000
		}
	}
	k := ownKey{o, id}
	fs, ok := c.m[k]
	if !ok {
		c.order.add(o, id, true, 1)
	}
	fs = slices.DeleteFunc(fs, func(o *reach.Frame) bool {
		return o.Request == f.Request || o.Request.Root().State() != reach.RequestRunning
	})
	if len(fs) >= maxChosenPerID {
		fs = fs[1:]
	}
	c.m[k] = append(fs, f)
	c.order.trim(c.max, func(k ownKey) int { delete(c.m, k); return 1 })
}

// Turn returns the model turn that chose call id for a caller who: within
// the running request named (or one under it), else the one running
// request's; only a request who owns counts (CheckOwner).
func (c *ModelChoices) Turn(id, request string, who *auth.Identity) *reach.Frame {
	if id == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fs := c.m[ownKey{ownerOf(who), id}]
	var found *reach.Frame
	for i := len(fs) - 1; i >= 0; i-- {
		f := fs[i]
		if f.Request.Root().State() != reach.RequestRunning || CheckCaller(who, f.Request) != nil {
			continue
		}
		if request != "" {
			if (Target{Request: request, ModelTurn: f}).modelTurn() != nil {
				return f
			}
			continue
		}
		if found != nil {
			return nil // two running requests' models chose it
		}
		found = f
	}
	return found
}

// The tool calls a model chose, by what they call. Frameworks run the tool
// calls their model chose over MCP without saying which turn chose them (no
// "reach/call_id"); an MCP tools/call from the same principal, of that tool
// with those arguments, soon after the turn, is that turn's child (Match).

// ChoiceWindow is how long after a model turn a tool call it chose is
// matched by its tool and arguments.
const ChoiceWindow = 2 * time.Minute

// maxChoices bounds the tool calls remembered by their arguments.
const maxChoices = 10000

// choice is one tool call a model turn chose.
type choice struct {
	f    *reach.Frame
	id   string // the tool call's id
	name string // the function name the model called
	at   time.Time
	used bool // an MCP call matched it
	// nth counts the choices of the same turn that handed the same task
	// before this one (byTask's): the store's record of it has the same
	// (store.HandedTask.Nth).
	nth int
	// handed is the hand-off of a sub-agent begun from it (Delegated):
	// set the first time, under ModelChoices.mu.
	handed *Handoff
}

// Handoff is a tool call a model turn chose whose string argument a
// sub-agent in the agent's own process was then given as its task
// (Delegated): Turn is the turn that chose it, Tool the function the
// model called. The sub-agent runs in a sub-request carved from Turn's
// request, begun once (Sub), however many times its first turn is sent.
type Handoff struct {
	Turn *reach.Frame
	Tool string

	mu  sync.Mutex
	sub *reach.Request
}

// Sub returns the sub-request the sub-agent runs in: the one begin began
// for h, while it has not completed, else a new one begin begins (a
// sub-agent begun again after its first run ended, on the same call).
// Calls for one h are one at a time.
func (h *Handoff) Sub(begin func() (*reach.Request, error)) (*reach.Request, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sub != nil && h.sub.State() != reach.RequestCompleted {
		return h.sub, nil
	}
	sub, err := begin()
	if err != nil {
		return nil, err
	}
	h.sub = sub
	return sub, nil
}

// RecordCall records that the model turn f chose to call the function name
// with args (JSON text) under the tool call id: by its id (Record), and by
// its tool and arguments, for Match.
func (c *ModelChoices) RecordCall(f *reach.Frame, id, name string, args []byte) {
	c.Record(id, f)
	key, ok := ArgsKey(args)
	if !ok || name == "" {
		return
	}
	now := time.Now()
	o := frameOwner(f)
	k := ownKey{o, key}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byArgs == nil {
		c.byArgs = map[ownKey][]*choice{}
	}
	old, had := c.byArgs[k]
	n := len(old)
	cs := slices.DeleteFunc(old, func(o *choice) bool { return now.Sub(o.at) > ChoiceWindow })
	c.argOrder.drop(o, n-len(cs))
	c.byArgs[k] = append(cs, &choice{f: f, id: id, name: name, at: now})
	c.argOrder.add(o, key, !had, 1)
	c.argOrder.trim(cmp.Or(c.maxArgs, maxChoices), func(k ownKey) int {
		n := len(c.byArgs[k])
		delete(c.byArgs, k)
		return n
	})
	c.recordTasks(f, o, id, name, args, now)
}

// maxTask bounds a string argument remembered as a sub-agent's task, in
// bytes.
const maxTask = 16 << 10

// recordTasks records, by each string member of args (a JSON object), that
// turn f chose the call: a tool that runs a sub-agent in the agent's own
// process (an agent as a tool, a tool whose code runs another agent) gives
// it one of them as its first message, and its first model turn is then
// found by it (Delegated). c.mu is held.
func (c *ModelChoices) recordTasks(f *reach.Frame, o Owner, id, name string, args []byte, now time.Time) {
	for _, task := range TaskStrings(args) {
		if c.byTask == nil {
			c.byTask = map[ownKey][]*choice{}
		}
		k := ownKey{o, taskKey(task)}
		old, had := c.byTask[k]
		n := len(old)
		cs := slices.DeleteFunc(old, func(o *choice) bool { return now.Sub(o.at) > ChoiceWindow })
		c.taskOrder.drop(o, n-len(cs))
		nth := 0
		for _, ch := range cs {
			if ch.f == f {
				nth++
			}
		}
		c.byTask[k] = append(cs, &choice{f: f, id: id, name: name, at: now, nth: nth})
		c.taskOrder.add(o, k.key, !had, 1)
	}
	c.taskOrder.trim(cmp.Or(c.maxTasks, maxChoices), func(k ownKey) int {
		n := len(c.byTask[k])
		delete(c.byTask, k)
		return n
	})
}

// TaskStrings returns the string members of a tool call's arguments (a
// JSON object) that a sub-agent may be given as its task: trimmed, not
// empty, up to maxTask bytes each, each once.
func TaskStrings(args []byte) []string {
	if !bytes.Contains(args, []byte(`"`)) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var out []string
	for _, v := range m {
		var task string
		if len(v) == 0 || v[0] != '"' || len(v) > 2*maxTask || json.Unmarshal(v, &task) != nil {
			continue
		}
		task = strings.TrimSpace(task)
		if task == "" || len(task) > maxTask || slices.Contains(out, task) {
			continue
		}
		out = append(out, task)
	}
	return out
}

// TaskDigest is what a task handed by a turn of principal (of tenant) is
// stored by (store.HandedTasks): the SHA-256, in hex, of the principal,
// the tenant and the whole task, so that only the task's own text, and
// only for its principal, finds it. The task is trimmed as TaskStrings
// and Handed trim it.
func TaskDigest(principal, tenant, task string) string {
	h := sha256.New()
	for _, s := range []string{"reach handed task", principal, tenant} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write([]byte(strings.TrimSpace(task)))
	return hex.EncodeToString(h.Sum(nil))
}

// Adopt is Handed for a task whose turn another instance ran: f, the turn
// adopted here (its request joined), handed task by a call of the function
// tool, the turn's nth to hand it (store.HandedTask.Nth). The choice is
// remembered here as that turn's, begun from, so that the sub-agent's
// first turn sent again finds the same hand-off (Handed); one remembered
// already for f's request tree and nth is returned instead.
func (c *ModelChoices) Adopt(task string, f *reach.Frame, tool string, nth int) *Handoff {
	task = strings.TrimSpace(task)
	o := frameOwner(f)
	k := ownKey{o, taskKey(task)}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.byTask[k] {
		if ch.handed != nil && ch.f.Request.Root() == f.Request.Root() && ch.nth == nth && now.Sub(ch.at) <= ChoiceWindow {
			return ch.handed
		}
	}
	if c.byTask == nil {
		c.byTask = map[ownKey][]*choice{}
	}
	h := &Handoff{Turn: f, Tool: tool}
	_, had := c.byTask[k]
	c.byTask[k] = append(c.byTask[k], &choice{f: f, name: tool, at: now, used: true, handed: h, nth: nth})
	c.taskOrder.add(o, k.key, !had, 1)
	c.taskOrder.trim(cmp.Or(c.maxTasks, maxChoices), func(k ownKey) int {
		n := len(c.byTask[k])
		delete(c.byTask, k)
		return n
	})
	return h
}

// taskKey is what a task is remembered by: its digest, so that the
// memory a remembered task holds does not grow with the task (up to
// maxChoices of them, each up to maxTask bytes, would be 160 MiB).
func taskKey(task string) string {
	h := sha256.Sum256([]byte(task))
	return string(h[:])
}

// Delegated returns the model turn whose tool call handed task to a
// sub-agent, for the first model turn of a conversation that begins with
// task as its one user message and names no request: a turn of who's,
// within ChoiceWindow, whose request has not ended, that chose a call with
// task as one of its string arguments. Agent frameworks run a sub-agent
// (OpenAI Agents' agent as a tool, a tool of the AI SDK or LangGraph whose
// code runs another agent) in their own process, on a conversation of its
// own that holds nothing of its caller's; this is what links it. As Match,
// it is conservative: when turns of several requests chose such a call,
// the one request whose choice no sub-agent has begun from yet wins, and
// none when several wait. Each choice marks the sub-agent begun from it.
func (c *ModelChoices) Delegated(task string, who *auth.Identity) *reach.Frame {
	if h := c.Handed(task, who); h != nil {
		return h.Turn
	}
	return nil
}

// Handed is Delegated's hand-off: the turn and the call it chose, which
// the sub-agent's sub-request is begun from (Handoff.Sub).
func (c *ModelChoices) Handed(task string, who *auth.Identity) *Handoff {
	task = strings.TrimSpace(task)
	if task == "" || len(task) > maxTask {
		return nil
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var cands []*choice
	roots := map[*reach.Request]bool{}
	for _, ch := range c.byTask[ownKey{ownerOf(who), taskKey(task)}] {
		if now.Sub(ch.at) > ChoiceWindow {
			continue
		}
		root := ch.f.Request.Root()
		if root.State() == reach.RequestCompleted || root.State() == reach.RequestInterrupted || CheckCaller(who, ch.f.Request) != nil {
			continue
		}
		cands = append(cands, ch)
		roots[root] = true
	}
	if len(roots) > 1 {
		waiting := map[*reach.Request]bool{}
		for _, ch := range cands {
			if !ch.used {
				waiting[ch.f.Request.Root()] = true
			}
		}
		if len(waiting) != 1 {
			return nil
		}
		cands = slices.DeleteFunc(cands, func(ch *choice) bool { return !waiting[ch.f.Request.Root()] })
	}
	if len(cands) == 0 {
		return nil
	}
	pick := cands[0]
	for _, ch := range cands {
		if !ch.used {
			pick = ch
			break
		}
	}
	// The sub-request goes by the function's name (its agent, which
	// policies read as context.agent). A model can choose a call of any
	// name with a real sub-agent's task beside it (a prompt injection): when
	// the calls still waiting for this task disagree on the name, none is
	// trusted and the sub-agent goes by no model-chosen name. Nor when the
	// turn that chose it handed the same task to another function as well
	// (two sub-agents asked the same thing at once): which call a first
	// turn belongs to cannot be told from its task, and the second to come
	// would go by a name that may be the other's.
	tool := pick.name
	for _, ch := range cands {
		if (!ch.used || ch == pick || ch.f == pick.f) && ch.name != tool {
			tool = ""
			break
		}
	}
	pick.used = true
	if pick.handed == nil {
		pick.handed = &Handoff{Turn: pick.f, Tool: tool}
	}
	return pick.handed
}

// HandedIn is Handed for the turn of request that a store shared by
// several instances chose for task (store.HandedTasks.ClaimHandedTask,
// which decides for them all as Handed does for one): the hand-off from
// this instance's choice of task in request (frame's, the turn the store
// names, its nth to hand the task, if remembered, else the newest),
// marked begun from; nil when
// this instance remembers no such choice of who's (its turn ran on
// another instance). The sub-agent goes by tool, the name the store
// keeps, unless this instance's choices in request disagree on it.
func (c *ModelChoices) HandedIn(task string, who *auth.Identity, request, frame, tool string, nth int) *Handoff {
	task = strings.TrimSpace(task)
	if task == "" || len(task) > maxTask {
		return nil
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var pick *choice
	turn := false // a choice of frame is remembered
	for _, ch := range c.byTask[ownKey{ownerOf(who), taskKey(task)}] {
		if now.Sub(ch.at) > ChoiceWindow || ch.f.Request.ID() != request || CheckCaller(who, ch.f.Request) != nil {
			continue
		}
		if st := ch.f.Request.Root().State(); st == reach.RequestCompleted || st == reach.RequestInterrupted {
			continue
		}
		if pick != nil && pick.name != ch.name {
			tool = ""
		}
		if ch.f.ID.String() == frame {
			turn = true
		}
		if pick == nil || !(pick.f.ID.String() == frame && pick.nth == nth) {
			pick = ch
		}
	}
	// The turn is remembered, its nth call's choice not (another call's
	// was adopted here): none, for the caller to adopt that call's.
	if pick == nil || turn && !(pick.f.ID.String() == frame && pick.nth == nth) {
		return nil
	}
	pick.used = true
	if pick.handed == nil {
		pick.handed = &Handoff{Turn: pick.f, Tool: tool}
	}
	return pick.handed
}

// Match returns the model turn that chose a tool call of tool with args, as
// an MCP client that sends no reach _meta calls it: a turn of who's, within
// ChoiceWindow, whose request has not ended, that chose a function of that
// name (or of that name behind a prefix a framework adds, such as
// "server__") with the same arguments (canonical JSON, top-level nulls
// left out). Ambiguity is resolved conservatively: when turns of several
// requests chose that call, the one of request prefer (the request the
// caller's earlier calls were linked to) wins; without it, the one request
// whose choice no call has matched yet (the others' runs had their call),
// and none when several wait for it.
// Each choice matches one call (the oldest unmatched first); a call made
// again (a framework's retry) matches a choice already matched when no
// other request's turn chose it. It returns the turn and the tool call's
// id, which the call then goes by.
func (c *ModelChoices) Match(tool string, args []byte, who *auth.Identity, prefer string) (*reach.Frame, string) {
	if c.none() {
		return nil, "" // no model turn chose a call: nothing to compute
	}
	key, ok := ArgsKey(args)
	if !ok || tool == "" {
		return nil, ""
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var cands []*choice
	roots := map[*reach.Request]bool{}
	for _, ch := range c.byArgs[ownKey{ownerOf(who), key}] {
		if now.Sub(ch.at) > ChoiceWindow || !NameMatches(ch.name, tool) {
			continue
		}
		root := ch.f.Request.Root()
		if root.State() == reach.RequestCompleted || root.State() == reach.RequestInterrupted || CheckCaller(who, ch.f.Request) != nil {
			continue
		}
		cands = append(cands, ch)
		roots[root] = true
	}
	if len(roots) > 1 && prefer != "" {
		if pre := slices.DeleteFunc(slices.Clone(cands), func(ch *choice) bool { return ch.f.Request.Root().ID() != prefer }); len(pre) > 0 {
			cands, roots = pre, nil
		}
	}
	if len(roots) > 1 {
		// A choice a call already answered is spent: the run that made it
		// has had its call. An agent run again with the same question
		// chooses the same call while the first run's request, which only
		// idle_gap ends, still counts; its call is the one run's still
		// waiting for it. Runs that wait for it together stay ambiguous.
		waiting := map[*reach.Request]bool{}
		for _, ch := range cands {
			if !ch.used {
				waiting[ch.f.Request.Root()] = true
			}
		}
		if len(waiting) != 1 {
			return nil, ""
		}
		cands = slices.DeleteFunc(cands, func(ch *choice) bool { return !waiting[ch.f.Request.Root()] })
	}
	if len(cands) == 0 {
		return nil, ""
	}
	pick := cands[0]
	for _, ch := range cands {
		if !ch.used {
			pick = ch
			break
		}
	}
	pick.used = true
	return pick.f, pick.id
}

// none reports whether no tool call is remembered by its arguments.
func (c *ModelChoices) none() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byArgs) == 0
}

// NameMatches reports whether a model's function name chosen names the MCP
// tool: the same name, or the name behind a prefix that ends in a
// separator ("reach__", "mcp.", "server-").
func NameMatches(chosen, tool string) bool {
	if chosen == tool {
		return true
	}
	if len(chosen) <= len(tool) || !strings.HasSuffix(chosen, tool) {
		return false
	}
	switch chosen[len(chosen)-len(tool)-1] {
	case '_', '.', '-', ':', '/':
		return true
	}
	return false
}

// ArgsKey is the canonical form of a tool call's arguments that Match
// compares: canonical JSON, with the members of an object whose value is
// null left out (frameworks differ in sending them); no arguments are {}.
// It reports false for arguments that are not a JSON object.
func ArgsKey(args []byte) (string, bool) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		return "{}", true
	}
	if len(args) < 2 || args[0] != '{' {
		return "", false
	}
	if !bytes.Contains(args, []byte("null")) { // nothing to leave out
		canon, err := callgraph.Normalize(nil, args)
		if err != nil {
			return "", false
		}
		return string(canon), true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return "", false
	}
	for k, v := range m {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(m, k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", false
	}
	canon, err := callgraph.Normalize(nil, b)
	if err != nil {
		return "", false
	}
	return string(canon), true
}

// Continued returns the model turn a conversation continues: the newest
// turn that chose one of the tool call ids a chat request's history holds
// (ids, newest last), in a request of who's that has not ended; an id
// chosen in several such requests tells nothing and is passed over.
func (c *ModelChoices) Continued(ids []string, who *auth.Identity) *reach.Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range slices.Backward(ids) {
		var found *reach.Frame
		for _, f := range c.m[ownKey{ownerOf(who), id}] {
			root := f.Request.Root()
			if root.State() == reach.RequestCompleted || root.State() == reach.RequestInterrupted || CheckCaller(who, f.Request) != nil {
				continue
			}
			if found != nil && found.Request.Root() != root {
				found = nil
				break
			}
			found = f
		}
		if found != nil {
			return found
		}
	}
	return nil
}

// maxResponses bounds the Responses API answers remembered by their id.
const maxResponses = 10000

// RecordResponse records that the model turn f gave the Responses API
// answer id, which a later turn's previous_response_id names: its input then
// holds only the new items (the endpoint keeps the history), and no tool
// call id tells which conversation it goes on.
func (c *ModelChoices) RecordResponse(id string, f *reach.Frame) {
	if id == "" {
		return
	}
	o := frameOwner(f)
	k := ownKey{o, id}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.responses == nil {
		c.responses = map[ownKey]*reach.Frame{}
	}
	if _, ok := c.responses[k]; !ok {
		c.respOrder.add(o, id, true, 1)
	}
	c.responses[k] = f
	c.respOrder.trim(cmp.Or(c.maxResp, maxResponses), func(k ownKey) int { delete(c.responses, k); return 1 })
}

// Responded returns the model turn that gave the Responses API answer id,
// for a caller who: only while its request has not ended, and only a
// request who owns. Ids are the endpoint's, unique to a conversation, so
// one is never ambiguous as a tool call id may be.
func (c *ModelChoices) Responded(id string, who *auth.Identity) *reach.Frame {
	f := c.Answered(id, who)
	if f == nil {
		return nil
	}
	if st := f.Request.Root().State(); st == reach.RequestCompleted || st == reach.RequestInterrupted {
		return nil
	}
	return f
}

// Answered returns the model turn that gave the Responses API answer id,
// for a caller who, its request ended or not: the endpoint keeps that
// answer's history for a turn that names it in a new request too, and the
// tokens the turn was charged tell how long it is at least. (An ended
// request's answer is forgotten when it comes round, as any.)
func (c *ModelChoices) Answered(id string, who *auth.Identity) *reach.Frame {
	if id == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.responses[ownKey{ownerOf(who), id}]
	if f == nil || CheckCaller(who, f.Request) != nil {
		return nil
	}
	return f
}
