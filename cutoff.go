package reach

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A write whose answer never reached its caller — its caller went away
// while it ran (a dropped connection cancels the call), or the gateway
// was killed while it ran — may have taken effect, and the caller cannot
// know. A client that retries after a transport error (Mastra's MCP
// client reconnects and calls again; an HTTP client's retry) sends the
// call again with a new call id and no idempotency key: a new derived
// key, so the write would run twice. The runtime remembers such a write,
// by its owner (the root request's principal and tenant), tool and
// normalized arguments, for CutOffWindow; the first identical write of the
// same owner without a key of its own in that time is answered with the
// error interrupted, which names the call that was cut off, and nothing
// runs. It is answered so once: the call after it runs. A write that was
// answered is never remembered, so two identical writes that were both
// answered both run. A write whose caller went away while its tool still
// runs (a tool deaf to its context) is cut off already: its retry is
// answered so, and its late return is not remembered again.

// CutOffWindow is how long a write cut off before its answer reached its
// caller is remembered for its caller's retry.
const CutOffWindow = 10 * time.Minute

// cutOffCap bounds the writes remembered: past it, the oldest of the owner
// with the most is dropped.
const cutOffCap = 4096

type cutOffs struct {
	n       atomic.Int64 // entries: a write looks only when there are some
	live    atomic.Int64 // writes running, in running
	mu      sync.Mutex
	m       map[string]cutOffWrite // cutOffKey -> the write
	running map[cutOffID]runningWrite
	// told holds the writes whose retry was told while they ran and whose
	// place in running a later identical write took (one that ran after
	// the retry): their end is not remembered again.
	told map[[2]string]struct{}
}

// cutOffID is cutOffKey's parts: a running write is looked up by it with
// no string made for it.
type cutOffID struct{ scope, tool, args string }

func (id *cutOffID) key() string { return cutOffKey(id.scope, id.tool, id.args) }

// runningWrite is a write with a derived key whose tool may be running:
// one whose caller went away is cut off already, though its tool is not
// back (a tool deaf to its context), and its retry is told so.
type runningWrite struct {
	ctx           context.Context // its caller's: done when it went away
	request, call string
	taken         bool // its retry was told
}

// start records the write of id running under ctx.
func (t *cutOffs) start(id cutOffID, ctx context.Context, request, call string) {
	t.mu.Lock()
	if t.running == nil {
		t.running = map[cutOffID]runningWrite{}
	}
	if r, ok := t.running[id]; !ok {
		t.live.Add(1)
	} else if r.taken {
		if t.told == nil {
			t.told = map[[2]string]struct{}{}
		}
		t.told[[2]string{r.request, r.call}] = struct{}{}
	}
	t.running[id] = runningWrite{ctx: ctx, request: request, call: call}
	t.mu.Unlock()
}

// end records the write of id done; cut says it was cut off while its tool
// ran, and it is remembered unless its retry was told already.
func (t *cutOffs) end(ctx context.Context, id cutOffID, request, call string, cut bool) {
	t.mu.Lock()
	r, ok := t.running[id]
	mine := ok && r.request == request && r.call == call
	taken := mine && r.taken
	if mine {
		delete(t.running, id)
		t.live.Add(-1)
	} else if _, ok := t.told[[2]string{request, call}]; ok {
		delete(t.told, [2]string{request, call})
		taken = true
	}
	t.mu.Unlock()
	if cut && !taken {
		w := cutOffWrite{owner: id.scope, tool: id.tool, request: request, call: call, at: time.Now()}
		if se, ok := context.Cause(ctx).(*StopError); ok {
			w.stopped = se.Error() // the gateway's stop, not its caller
		}
		t.note(id.key(), w)
	}
}

// cutOffWrite is a write that was cut off.
type cutOffWrite struct {
	owner               string // its owner's scope: the head of its key
	tool, request, call string
	at                  time.Time
	restart             bool   // a restart cut it off (else its caller went away)
	stopped             string // the stop of its request that cut it off, if one did
}

// cutOffKey is the key of a write of tool with the arguments' digest args
// by the owner scope (an idempotency record key's scope, idemKeys).
func cutOffKey(scope, tool, args string) string {
	return scope + tool + "\x00" + args
}

func (t *cutOffs) note(key string, w cutOffWrite) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]cutOffWrite{}
	}
	if _, ok := t.m[key]; !ok && len(t.m) >= cutOffCap {
		// Past the cap, the oldest write of the owner with the most is
		// dropped: one principal cutting off writes by the thousand
		// forgets its own, not another's.
		now := time.Now()
		per := map[string]int{}
		for k, e := range t.m {
			if now.Sub(e.at) > CutOffWindow {
				delete(t.m, k)
			} else {
				per[e.owner]++
			}
		}
		if len(t.m) >= cutOffCap {
			most := w.owner
			for o, n := range per {
				if n > per[most] {
					most = o
				}
			}
			var oldest string
			for k, e := range t.m {
				if e.owner == most && (oldest == "" || e.at.Before(t.m[oldest].at)) {
					oldest = k
				}
			}
			delete(t.m, oldest)
		}
	}
	t.m[key] = w
	t.n.Store(int64(len(t.m)))
}

// forget drops the write remembered under key if it is w's (not taken, and
// not another's noted since).
func (t *cutOffs) forget(key string, w *cutOffWrite) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[key]; ok && e.request == w.request && e.call == w.call && e.at.Equal(w.at) {
		delete(t.m, key)
		t.n.Store(int64(len(t.m)))
	}
}

// take returns the write remembered under id, and forgets it: a write
// is answered for once. A write of id still running whose caller went
// away is one too.
func (t *cutOffs) take(id cutOffID) (cutOffWrite, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n.Load() > 0 {
		key := id.key()
		w, ok := t.m[key]
		if ok {
			delete(t.m, key)
			t.n.Store(int64(len(t.m)))
			if time.Since(w.at) <= CutOffWindow {
				return w, true
			}
		}
	}
	if r, ok := t.running[id]; ok && !r.taken && r.ctx.Err() != nil {
		r.taken = true
		t.running[id] = r
		return cutOffWrite{owner: id.scope, tool: id.tool, request: r.request, call: r.call, at: time.Now()}, true
	}
	return cutOffWrite{}, false
}

// refusal is what the retry of w is answered.
func (w *cutOffWrite) refusal() *Result {
	how := "it was cancelled while it ran (its caller hung up, or cancelled it)"
	if w.restart {
		how = "the gateway stopped while it ran"
	} else if w.stopped != "" {
		how = "it was cancelled while it ran, as its " + w.stopped
	}
	return &Result{Status: StatusError, Error: &Error{Guard: "idempotency", Type: TypeInterrupted, Code: "interrupted",
		Message: fmt.Sprintf("The same call of %s, with these arguments, was cut off before its answer was delivered (call %s of request %s, %s UTC): %s, and it may have taken effect. Nothing ran now.",
			w.tool, w.call, w.request, w.at.UTC().Format("15:04:05"), how),
		Suggestion: "Check whether it took effect before going on. If it must still happen, call it again with the same arguments: the next call runs."}}
}

// NoteCutOff tells the runtime of a write that a restart cut off while its
// tool ran (recovery's, for each claim it settles as interrupted): record
// is the key of its idempotency record, args the digest of its arguments
// (the record's), and request and call name it. A record whose key the
// caller gave (not one derived from its request and call id) is left out:
// a retry with that key is answered by its record.
func (rt *Runtime) NoteCutOff(record, tool, request, call, args string) {
	i := strings.LastIndexByte(record, 0)
	if i < 0 || tool == "" || call == "" {
		return // a key of the runtime's own: not a caller's write
	}
	scope, rest := record[:i+1], record[i+1:]
	key, ok := strings.CutPrefix(rest, tool+":")
	if !ok || !strings.HasSuffix(key, "/"+call) {
		return
	}
	rt.cutOffs.note(cutOffKey(scope, tool, args), cutOffWrite{owner: scope, tool: tool, request: request, call: call, at: time.Now(), restart: true})
}
