package reach

import (
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
// answered both run.

// CutOffWindow is how long a write cut off before its answer reached its
// caller is remembered for its caller's retry.
const CutOffWindow = 10 * time.Minute

// cutOffCap bounds the writes remembered: past it, the oldest are dropped.
const cutOffCap = 4096

type cutOffs struct {
	n  atomic.Int64 // entries: a write looks only when there are some
	mu sync.Mutex
	m  map[string]cutOffWrite // cutOffKey -> the write
}

// cutOffWrite is a write that was cut off.
type cutOffWrite struct {
	tool, request, call string
	at                  time.Time
	restart             bool // a restart cut it off (else its caller went away)
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
	if len(t.m) >= cutOffCap {
		now := time.Now()
		var oldest string
		for k, e := range t.m {
			if now.Sub(e.at) > CutOffWindow {
				delete(t.m, k)
			} else if oldest == "" || e.at.Before(t.m[oldest].at) {
				oldest = k
			}
		}
		if len(t.m) >= cutOffCap {
			delete(t.m, oldest)
		}
	}
	t.m[key] = w
	t.n.Store(int64(len(t.m)))
}

// take returns the write remembered under key, and forgets it: a write
// is answered for once.
func (t *cutOffs) take(key string) (cutOffWrite, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.m[key]
	if ok {
		delete(t.m, key)
		t.n.Store(int64(len(t.m)))
		ok = time.Since(w.at) <= CutOffWindow
	}
	return w, ok
}

// refusal is what the retry of w is answered.
func (w *cutOffWrite) refusal() *Result {
	how := "it was cancelled while it ran (its caller hung up, or cancelled it)"
	if w.restart {
		how = "the gateway stopped while it ran"
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
	rt.cutOffs.note(cutOffKey(scope, tool, args), cutOffWrite{tool: tool, request: request, call: call, at: time.Now(), restart: true})
}
