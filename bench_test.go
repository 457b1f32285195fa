package reach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreach/reach"
)

var leafArgs = json.RawMessage(`{"order_id":"2025011400123","fields":["status","amount"]}`)

const leafSchema = `{"type":"object","required":["order_id"],"properties":{"order_id":{"type":"string"},"fields":{"type":"array","items":{"type":"string"}}}}`

var leafN atomic.Int64

// leaf answers like an order lookup whose state moves on each call, so that
// the loop guard sees progress rather than a repeated identical result.
func leaf(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
	b := make([]byte, 0, 64)
	b = append(b, `{"order_id":"2025011400123","status":"SHIPPED","seq":`...)
	b = strconv.AppendInt(b, leafN.Add(1), 10)
	return append(b, '}'), nil
}

// atDepth runs body with a context whose frame is a tool call at depth
// depth-1, so that calls made in body are at depth depth.
func atDepth(b *testing.B, rt *reach.Runtime, ctx context.Context, depth int, body func(ctx context.Context)) {
	dig := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		f, _ := reach.FrameFrom(ctx)
		if f.Depth >= depth-1 {
			body(ctx)
			return nil, nil
		}
		res := rt.Call(ctx, &reach.Call{ID: "d", Tool: "dig", Arguments: json.RawMessage(fmt.Sprintf(`{"level":%d}`, f.Depth+1))})
		if res.IsError() {
			b.Fatal(res.ModelText())
		}
		return nil, nil
	}
	rt.MustRegister(reach.Tool{Name: "dig", Reentrancy: reach.Reentrant, Func: dig})
	if depth == 1 {
		body(ctx)
		return
	}
	if res := rt.Call(ctx, &reach.Call{ID: "d", Tool: "dig", Arguments: json.RawMessage(`{"level":1}`)}); res.IsError() {
		b.Fatal(res.ModelText())
	}
}

func benchRuntime(b *testing.B, tools int) *reach.Runtime {
	rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}})
	ts := make([]reach.Tool, 0, tools)
	for i := range tools - 1 {
		ts = append(ts, reach.Tool{Name: fmt.Sprintf("tool_%04d", i), Func: leaf, InputSchema: json.RawMessage(leafSchema)})
	}
	ts = append(ts, reach.Tool{Name: "get_order", Reentrancy: reach.Reentrant, Func: leaf, InputSchema: json.RawMessage(leafSchema)})
	rt.MustRegister(ts...)
	return rt
}

// BenchmarkCall measures one call through the whole chain (every guard on)
// against calling the tool's function directly, at several stack depths and
// catalog sizes.
func BenchmarkCall(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			leaf(ctx, leafArgs)
		}
	})
	for _, tools := range []int{10, 1000} {
		for _, depth := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("tools=%d/depth=%d", tools, depth), func(b *testing.B) {
				rt := benchRuntime(b, tools)
				ctx, req, _ := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{}})
				defer req.End()
				atDepth(b, rt, ctx, depth, func(ctx context.Context) {
					c := &reach.Call{ID: "c", Tool: "get_order", Arguments: leafArgs}
					b.ReportAllocs()
					for b.Loop() {
						if res := rt.Call(ctx, c); res.IsError() {
							b.Fatal(res.ModelText())
						}
					}
				})
			})
		}
	}
}

// BenchmarkCancel measures how long a stop takes to reach 1,000 calls in
// flight in one request tree (500 in the request, 500 in a sub-request):
// from Stop until every handler has seen its context end, and until a new
// call is refused. It reports the p50 and p99 over the iterations (ns/op
// includes setting up the 1,000 calls; the latency metrics do not).
func BenchmarkCancel(b *testing.B) {
	for _, mode := range []reach.StopMode{reach.Cancel, reach.Isolate} {
		b.Run(mode.String(), func(b *testing.B) {
			const inflight = 1000
			var lat, refuse []time.Duration
			for b.Loop() {
				rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}})
				var entered, seen sync.WaitGroup
				var mu sync.Mutex
				var last time.Time
				rt.MustRegister(reach.Tool{Name: "wait", Reentrancy: reach.Reentrant, Func: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
					entered.Done()
					<-ctx.Done()
					now := time.Now()
					mu.Lock()
					if now.After(last) {
						last = now
					}
					mu.Unlock()
					seen.Done()
					return nil, ctx.Err()
				}})
				ctx, req, _ := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{}})
				sctx, _, _ := rt.Delegate(ctx, &reach.Delegation{Agent: "sub"})
				entered.Add(inflight)
				seen.Add(inflight)
				var done sync.WaitGroup
				for i := range inflight {
					c := ctx
					if i%2 == 1 {
						c = sctx
					}
					done.Go(func() {
						rt.Call(c, &reach.Call{ID: "w", Tool: "wait", Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
					})
				}
				entered.Wait()
				start := time.Now()
				req.Stop(mode, "bench", "runaway")
				res := rt.Call(sctx, &reach.Call{ID: "n", Tool: "wait", Arguments: json.RawMessage(`{"new":1}`)})
				refused := time.Since(start)
				if res.Status != reach.StatusCancelled {
					b.Fatalf("new call after stop: %s", res.Status)
				}
				seen.Wait()
				lat = append(lat, last.Sub(start))
				refuse = append(refuse, refused)
				done.Wait()
				req.End()
			}
			slices.Sort(lat)
			slices.Sort(refuse)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(refuse[len(refuse)*99/100].Microseconds()), "p99-refuse-µs")
		})
	}
}

// BenchmarkBreakerOpen measures a call to a read tool whose circuit
// breaker is open (its upstream went away): the call fails at once with
// the breaker's error, without running the tool, which would take 50ms to
// fail each of its attempts. With a fallback, the fallback answers.
func BenchmarkBreakerOpen(b *testing.B) {
	down := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		time.Sleep(50 * time.Millisecond)
		return nil, &reach.ToolError{Type: "unavailable", Message: "upstream kb is not reachable: connection refused"}
	}
	for _, fallback := range []bool{false, true} {
		b.Run(fmt.Sprintf("fallback=%v", fallback), func(b *testing.B) {
			rt := reach.New(&reach.Options{DefaultBudget: &reach.Budget{}, DisableLoopGuard: true})
			t := reach.Tool{Name: "kb__search", Upstream: "kb", Retry: &reach.RetryPolicy{Attempts: 3, Base: time.Millisecond}, Func: down}
			if fallback {
				t.Fallback = []reach.Followup{{Tool: "mirror__search", Args: `{"query": "{args.q}"}`}}
			}
			rt.MustRegister(t, reach.Tool{Name: "mirror__search", Upstream: "mirror", Func: leaf})
			ctx, req, _ := rt.Begin(context.Background(), &reach.RequestOptions{Budget: &reach.Budget{}})
			defer req.End()
			c := &reach.Call{ID: "c", Tool: "kb__search", Arguments: json.RawMessage(`{"q":"refunds"}`)}
			for range 9 { // the first calls open it
				rt.Call(ctx, c)
			}
			b.ReportAllocs()
			for b.Loop() {
				res := rt.Call(ctx, c)
				switch {
				case fallback && res.Fallback != "mirror__search":
					b.Fatalf("%s: %s", res.Status, res.ModelText())
				case !fallback && (res.Error == nil || res.Error.Code != "breaker_open"):
					b.Fatalf("%s: %s", res.Status, res.ModelText())
				}
			}
		})
	}
}

// BenchmarkBreakerClosed measures what a closed breaker adds to a call
// that succeeds: its admission and the report of the outcome (a call pays
// this for its tool's breaker, and for its upstream's if it has one).
func BenchmarkBreakerClosed(b *testing.B) {
	rt := reach.New(nil)
	br := rt.Breaker(reach.BreakerTool, "get_order", nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, e := br.Admit(ctx)
		if e != nil {
			b.Fatal(e)
		}
		p.Succeeded()
	}
}
