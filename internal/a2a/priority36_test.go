package a2a

import (
	"context"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// linksSeen is a Linker that keeps the links it is given, then places as
// the one it wraps.
type linksSeen struct {
	Linker
	mu  sync.Mutex
	got []Link
}

func (l *linksSeen) Place(ctx context.Context, k *Link) (context.Context, func(), error) {
	l.mu.Lock()
	l.got = append(l.got, *k)
	l.mu.Unlock()
	return l.Linker.Place(ctx, k)
}

// TestMetaPriorityToLinker: a message's metadata reach/priority (or its
// request's, the message's winning) reaches the linker as the link's
// priority, for the request it begins, and is not forwarded to the agent:
// the priority is of reach's request. (What the linker does with it, the
// gateway's, is TestA2AMetaPriority in internal/gateway.)
func TestMetaPriorityToLinker(t *testing.T) {
	seen := &linksSeen{}
	h := newHarnessWith(t, func(o *Options) { seen.Linker = o.Link; o.Link = seen }, nil, "executor")
	for i, tc := range []struct {
		msg, req, want any
	}{
		{want: nil},
		{msg: 0, want: float64(0)}, // as JSON brings it
		{req: "0", want: "0"},
		{msg: 1, req: 0, want: float64(1)},
	} {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("say hi"))
		if tc.msg != nil {
			m.Metadata = map[string]any{MetaPriority: tc.msg}
		}
		req := &a2a.SendMessageRequest{Message: m}
		if tc.req != nil {
			req.Metadata = map[string]any{MetaPriority: tc.req, "other": "kept"}
		}
		if _, err := h.client("executor", "alice", false).SendMessage(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		seen.mu.Lock()
		got := seen.got[len(seen.got)-1].Priority
		seen.mu.Unlock()
		if got != tc.want {
			t.Errorf("case %d: the link's priority %#v; want %#v", i, got, tc.want)
		}
		sent := h.agents["executor"].seen()
		last := sent[len(sent)-1]
		if _, ok := last.meta[MetaPriority]; ok {
			t.Errorf("case %d: the agent got the message's metadata %v; want no %s", i, last.meta, MetaPriority)
		}
		if _, ok := last.reqMeta[MetaPriority]; ok || (tc.req != nil && last.reqMeta["other"] != "kept") {
			t.Errorf("case %d: the agent got the request's metadata %v; want the caller's without %s", i, last.reqMeta, MetaPriority)
		}
	}
}
