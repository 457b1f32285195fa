package link

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// FuzzFromHeaders reads a call's linking headers as a client may send
// them: never a panic; a refusal is an *Error of status 400 that names its
// header and says what to send instead; what it accepts is well formed (a
// scene policies can compare, a nonzero parent for a sent one), and the
// same values in a tools/call's _meta link the call to the same place.
func FuzzFromHeaders(f *testing.F) {
	f.Add("00f067aa0ba902b7", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "chitchat", "req-1", "small", "reach.request=req%2D2,reach.budget=big;p=1")
	f.Add("", "", "", "", "", "")
	f.Add("0000000000000000", "ff-00-00-00", "a b", "", "", "reach.request=%zz")
	f.Add("xyz", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", strings.Repeat("s", 65), "\x00", "\n", "=,;=")
	f.Fuzz(func(t *testing.T, parent, traceparent, scene, request, budget, baggage string) {
		h := http.Header{}
		set := func(k, v string) {
			if v != "" {
				h[k] = []string{v}
			}
		}
		set(HeaderParent, parent)
		set(HeaderTraceparent, traceparent)
		set(HeaderScene, scene)
		set(HeaderRequest, request)
		set(HeaderBudget, budget)
		set(HeaderBaggage, baggage)
		tg, err := FromHeaders(h)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("FromHeaders: %T %v, want an *Error", err, err)
			}
			if e.Status != http.StatusBadRequest || e.Code == "" || e.Suggestion == "" || !strings.Contains(e.Message, "Reach-") {
				t.Fatalf("refusal %+v: want 400, a code, the header's name and what to send", e)
			}
			return
		}
		if strings.TrimSpace(parent) != "" && tg.Parent == 0 {
			t.Fatalf("parent %q accepted as none", parent)
		}
		if CheckScene(tg.Scene) != nil {
			t.Fatalf("scene %q accepted: policies could not compare it", tg.Scene)
		}
		if tg.Trace != 0 {
			// What it read is what the header said.
			want := strings.ToLower(strings.TrimSpace(traceparent))
			if got := hex.EncodeToString(tg.TraceID[:]); !strings.Contains(want, got) || !strings.Contains(want, tg.Trace.String()) {
				t.Fatalf("traceparent %q read as trace %s, span %s", traceparent, got, tg.Trace)
			}
		}
		// The same linking in _meta (where a client can send it too): the
		// same trace, and the request baggage names when no header does.
		meta := map[string]any{}
		if traceparent != "" {
			meta[MetaTraceparent] = traceparent
		}
		if baggage != "" {
			meta[MetaBaggage] = baggage
		}
		m, err := FromMeta(meta)
		if err != nil {
			if len(BaggageRequest(baggage)) <= MaxRequestID {
				t.Fatalf("FromMeta of what the headers carried: %v", err)
			}
			return
		}
		if m.Trace != tg.Trace || m.TraceID != tg.TraceID {
			t.Fatalf("traceparent %q: _meta reads %s/%x, headers %s/%x", traceparent, m.Trace, m.TraceID, tg.Trace, tg.TraceID)
		}
		if strings.TrimSpace(request) == "" && m.Request != tg.Request {
			t.Fatalf("baggage %q: _meta names request %q, headers %q", baggage, m.Request, tg.Request)
		}
	})
}

// FuzzFromMeta reads a tools/call's _meta from any JSON object: never a
// panic; an error names the _meta key (or the budget) it is about; what it
// accepts is bounded and well formed.
func FuzzFromMeta(f *testing.F) {
	f.Add([]byte(`{"reach/request":"r1","reach/parent":"00f067aa0ba902b7","reach/budget":{"turns":3,"wall":"1m"},"reach/scene":"chitchat"}`))
	f.Add([]byte(`{"reach/budget":"small","baggage":"reach.request=r2,reach.budget=big","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`))
	f.Add([]byte(`{"reach/budget":{"turns":-1}}`))
	f.Add([]byte(`{"reach/budget":{"tokens":1e30,"wall":"forever"}}`))
	f.Add([]byte(`{"reach/parent":7,"reach/why":["x"],"reach/scene":"a b"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var meta map[string]any
		if json.Unmarshal(data, &meta) != nil {
			return
		}
		m, err := FromMeta(meta)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "_meta") && !strings.Contains(msg, "reach/budget") {
				t.Fatalf("error %q does not name what it is about", msg)
			}
			return
		}
		if len(m.Request) > MaxRequestID {
			t.Fatalf("request id of %d characters accepted", len(m.Request))
		}
		if CheckScene(m.Scene) != nil {
			t.Fatalf("scene %q accepted", m.Scene)
		}
		if _, ok := meta[MetaParent]; ok && meta[MetaParent] != nil && meta[MetaParent] != "" && m.Parent == 0 {
			t.Fatalf("parent %v accepted as none", meta[MetaParent])
		}
		if b := m.Budget; b != nil && b.Budget != nil {
			if x := b.Budget; x.Turns < 0 || x.Depth < 0 || x.ToolCalls < 0 || x.Tokens < 0 || x.Cost < 0 || x.Wall < 0 {
				t.Fatalf("negative budget accepted: %+v", *x)
			}
		}
	})
}
