package front

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/agentreach/reach"
	"github.com/agentreach/reach/internal/durable"
	"github.com/agentreach/reach/internal/link"
	"github.com/agentreach/reach/internal/mcpwire"
	"github.com/agentreach/reach/internal/store/sqlite"
)

// statelessBench is a server that answers sessionless calls of one client
// while another call of that client is in flight, as under a crowd of one
// app's clients: each call then begins a request of its own and ends it
// (link's forClient). With durable, its runtime records requests and
// checkpoints in SQLite, as reach serve does on one instance.
type statelessBench struct {
	s      *Server
	life   context.Context
	h      http.Header
	n      int
	writes func() int64 // the store's writes committed (durable)
}

func newStatelessBench(tb testing.TB, durableStore bool) *statelessBench {
	tb.Helper()
	o := &reach.Options{DefaultBudget: &reach.Budget{}}
	var writes func() int64
	if durableStore {
		st, err := sqlite.Open(context.Background(), tb.TempDir(), nil)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		writes = func() int64 { return st.WriterStats().Writes }
		cp := durable.New(st, nil, nil)
		o.Checkpoints, o.Requests, o.DeadLetters = cp, cp, cp
	}
	rt := reach.New(o)
	release := make(chan struct{})
	rt.MustRegister(reach.Tool{Name: "echo", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }})
	rt.MustRegister(reach.Tool{Name: "hold", Access: reach.Read, Reentrancy: reach.Reentrant,
		Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return json.RawMessage(`{}`), nil
		}})
	life, cancel := context.WithCancel(context.Background())
	owned := link.NewOwned(life, rt, time.Minute, link.Budgets{Default: &reach.Budget{}})
	s := New(&Options{Runtime: rt, Owned: owned, Choices: &link.ModelChoices{}, Tools: allTools{rt}, Levels: &Levels{}})
	s.SyncTools()
	b := &statelessBench{s: s, life: life, h: http.Header{}, writes: writes}
	b.h.Set("Content-Type", "application/json")
	b.h.Set("Accept", "application/json, text/event-stream")
	b.h.Set(mcpwire.HeaderProtocol, mcpwire.StatelessProtocol)
	b.h.Set("Mcp-Method", "tools/call")
	held := make(chan struct{})
	go func() {
		defer close(held)
		h := b.h.Clone()
		h.Set("Mcp-Name", "hold")
		var out bytes.Buffer
		s.AnswerPost(life, h, b.body("hold", 0), &out)
	}()
	b.h.Set("Mcp-Name", "echo")
	// The held call is in flight once the client's request count says so.
	for st := s.clientSession(nil, "bench", "1.0.0"); ; time.Sleep(time.Millisecond) {
		owned.Current(&st.Session) // takes the lock the held call's begin holds
		if s.fastCalls.Load() == 1 && owned.Request(&st.Session) != "" {
			break
		}
	}
	tb.Cleanup(func() {
		close(release)
		<-held
		s.Close()
		owned.EndAll()
		cancel()
	})
	return b
}

// body is a sessionless tools/call of tool, as the go-sdk's client sends
// one on the 2026-07-28 protocol.
func (b *statelessBench) body(tool string, i int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"` + tool +
		`","arguments":{"text":"q` + strconv.Itoa(i) + `"},"_meta":{"` + metaClientCapabilities + `":{"roots":{"listChanged":true}},"` +
		metaClientInfo + `":{"name":"bench","version":"1.0.0"},"` + metaProtocolVersion + `":"` + mcpwire.StatelessProtocol + `"}}}`)
}

// call answers one sessionless call of echo through AnswerPost.
func (b *statelessBench) call(tb testing.TB, out *bytes.Buffer) {
	b.n++
	out.Reset()
	body := b.body("echo", b.n)
	if _, ok := b.s.AnswerPost(b.life, b.h, body, out); !ok || !bytes.Contains(out.Bytes(), []byte(`"result"`)) ||
		bytes.Contains(out.Bytes(), []byte(`"isError":true`)) {
		tb.Fatalf("the fast lane did not answer the call: %v %s", ok, out.Bytes())
	}
}

// BenchmarkFastCallSessionless: a sessionless (2026-07-28) tools/call of a
// read on the fast lane, from its body to its answer (AnswerPost), while
// another call of the same client is in flight: a request begun and ended
// for the call, as 64 clients of one app calling at once get. store=sqlite
// records the request's rows (its begin and its end) in SQLite, and
// reports the store's writes committed a call (rows/op, after a last
// commit).
//
//	go test -run '^$' -bench FastCallSessionless -benchmem -count 6 ./internal/front/
func BenchmarkFastCallSessionless(b *testing.B) {
	for _, durableStore := range []bool{false, true} {
		name := "store=none"
		if durableStore {
			name = "store=sqlite"
		}
		b.Run(name, func(b *testing.B) {
			sb := newStatelessBench(b, durableStore)
			var out bytes.Buffer
			for range 20 {
				sb.call(b, &out)
			}
			b.ReportAllocs()
			var w0 int64
			if sb.writes != nil {
				w0 = sb.writes()
			}
			for b.Loop() {
				sb.call(b, &out)
			}
			if sb.writes != nil {
				b.StopTimer()
				time.Sleep(50 * time.Millisecond) // the writer's gather (5 ms) commits what is queued
				b.ReportMetric(float64(sb.writes()-w0)/float64(b.N), "rows/op")
			}
		})
	}
}
