package durable

import (
	"testing"
	"time"

	"github.com/agentreach/reach"
)

// FuzzDecodeCause reads a stored stop's cause as any instance sharing the
// store may have written it, or as a damaged row holds it: never a panic;
// its mode is one reach knows (Running for a mode it cannot read, which
// the readers take for a cancel); and what it read is stored and read
// again the same, so that a cause that goes round the store (a stop kept,
// recovered, stored again) keeps who stopped the request, why and when.
func FuzzDecodeCause(f *testing.F) {
	f.Add(EncodeCause(reach.Cause{Mode: reach.Isolate, By: "ops", Reason: "enough", At: time.Date(2026, 12, 6, 17, 0, 0, 0, time.UTC), Budget: "tokens", Request: "req-1"}))
	for _, s := range []string{`{"mode":"running"}`, `{"mode":"cancel","reason":5,"by":"x"}`, `null`, `{"mode":"soft","mode":"isolate"}`,
		`{"mode":"cancel","at":"2026-12-06T17:00:00+01:00","reason":"\ud800"}`, `{"Mode":3}`, `[]`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := DecodeCause(b)
		switch c.Mode {
		case reach.Running, reach.Soft, reach.Cancel, reach.Isolate:
		default:
			t.Fatalf("DecodeCause(%q): mode %d, which reach does not know", b, c.Mode)
		}
		again := DecodeCause(EncodeCause(c))
		if again.Mode != c.Mode || again.By != c.By || again.Reason != c.Reason || !again.At.Equal(c.At) || again.Budget != c.Budget || again.Request != c.Request {
			t.Fatalf("DecodeCause(%q) = %+v, stored and read again %+v", b, c, again)
		}
	})
}
