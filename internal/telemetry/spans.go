// Package telemetry turns the runtime's events into OpenTelemetry spans and
// Prometheus metrics. Both are reach.Recorders: combine them with
// reach.Recorders.
//
// Spans: one per frame, whose span id is the frame id and whose trace id is
// the root request's (random per root request), so a nested model call is the child of the
// tool call that made it, across sub-agents, with GenAI and MCP attributes.
package telemetry

import (
	"context"
	"crypto/sha256"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/agentreach/reach"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TraceID returns the trace id of an event: the request tree's
// (reach.Request.Trace), or for an event that carries none, one derived
// from the root request's id.
func TraceID(e *reach.Event) trace.TraceID {
	if e.Trace != ([16]byte{}) {
		return e.Trace
	}
	return rootTraceID(e.Root)
}

func rootTraceID(root string) trace.TraceID {
	sum := sha256.Sum256([]byte("reach/trace/" + root))
	var id trace.TraceID
	copy(id[:], sum[:16])
	return id
}

// SpanID returns the span id of a frame: the frame id itself.
func SpanID(f reach.FrameID) trace.SpanID {
	var id trace.SpanID
	for i := 7; i >= 0; i-- {
		id[i] = byte(f)
		f >>= 8
	}
	return id
}

type idsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// idGenerator hands the SDK the ids reach chose.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	v, _ := ctx.Value(idsKey{}).(ids)
	return v.trace, v.span
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	v, _ := ctx.Value(idsKey{}).(ids)
	return v.span
}

// TracerOptions configure a Tracer. Nil means defaults.
type TracerOptions struct {
	// QueueSize bounds the events waiting to become spans; beyond it events
	// are dropped and counted (never blocking a call). If zero, 8192.
	QueueSize int
	// Sync exports each span as it ends (tests); otherwise spans are batched.
	Sync bool
}

// Tracer is a reach.Recorder that makes a span of every frame.
type Tracer struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	queue   chan *reach.Event
	mu      sync.RWMutex // held to send on queue, and (exclusively) to close it
	closed  bool
	dropped atomic.Int64
	pending atomic.Int64 // queued or being turned into a span
	done    chan struct{}
	once    sync.Once
}

// NewTracer returns a Tracer exporting to exp. Call Shutdown to flush.
func NewTracer(exp sdktrace.SpanExporter, o *TracerOptions) *Tracer {
	var opts TracerOptions
	if o != nil {
		opts = *o
	}
	if opts.QueueSize == 0 {
		opts.QueueSize = 8192
	}
	var proc sdktrace.SpanProcessor
	if opts.Sync {
		proc = sdktrace.NewSimpleSpanProcessor(exp)
	} else {
		// Blocking: the batcher must not drop silently; our own queue in
		// front of it drops, and counts.
		proc = sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBlocking())
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(idGenerator{}), sdktrace.WithSpanProcessor(proc),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t := &Tracer{tp: tp, tracer: tp.Tracer("github.com/agentreach/reach"), queue: make(chan *reach.Event, opts.QueueSize), done: make(chan struct{})}
	go t.loop()
	return t
}

// Record implements reach.Recorder: it queues the event without blocking.
// After Shutdown (a call may end after its gateway closed) the event is
// dropped and counted.
func (t *Tracer) Record(_ context.Context, e *reach.Event) {
	if e.Frame == 0 {
		return // a stop, not a frame
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		t.dropped.Add(1)
		return
	}
	t.pending.Add(1)
	select {
	case t.queue <- e:
	default:
		t.pending.Add(-1)
		t.dropped.Add(1)
	}
}

// Dropped returns how many frames were not turned into spans because the
// queue was full or the Tracer was shut down.
func (t *Tracer) Dropped() int64 { return t.dropped.Load() }

// Shutdown flushes the queue and the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	t.once.Do(func() {
		t.mu.Lock()
		t.closed = true
		close(t.queue)
		t.mu.Unlock()
	})
	select {
	case <-t.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return t.tp.Shutdown(ctx)
}

// Flush waits until every queued event is a span and the exporter has them.
func (t *Tracer) Flush(ctx context.Context) error {
	for t.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		runtime.Gosched() // the loop goroutine drains the queue
	}
	return t.tp.ForceFlush(ctx)
}

func (t *Tracer) loop() {
	defer close(t.done)
	for e := range t.queue {
		t.span(e)
		t.pending.Add(-1)
	}
}

// span makes the span of one frame.
func (t *Tracer) span(e *reach.Event) {
	tid := TraceID(e)
	ctx := context.WithValue(context.Background(), idsKey{}, ids{trace: tid, span: SpanID(e.Frame)})
	if parent := SpanID(e.Parent); e.Parent != 0 || e.RemoteParent != ([8]byte{}) {
		if e.Parent == 0 { // a top frame whose caller's span is in another process
			parent = e.RemoteParent
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: parent, TraceFlags: trace.FlagsSampled}))
	}
	op, name := "execute_tool", "execute_tool "+e.Name
	attrs := []attribute.KeyValue{
		attribute.String("reach.request", e.Request),
		attribute.String("reach.frame", e.Frame.String()),
		attribute.String("reach.state", e.State.String()),
		attribute.String("gen_ai.agent.name", e.Agent),
	}
	switch e.Kind {
	case reach.ModelFrame:
		op, name = "chat", "chat "+e.Name
		attrs = append(attrs, attribute.String("gen_ai.request.model", e.Name), attribute.Int64("gen_ai.usage.total_tokens", e.Tokens))
	case reach.DelegateFrame:
		op, name = "invoke_agent", "invoke_agent "+e.Name
	default:
		attrs = append(attrs, attribute.String("gen_ai.tool.name", e.Name), attribute.String("mcp.method.name", "tools/call"))
		if e.CallID != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.call.id", e.CallID))
		}
	}
	attrs = append(attrs, attribute.String("gen_ai.operation.name", op))
	if e.Error != nil {
		attrs = append(attrs, attribute.String("reach.guard", e.Error.Guard), attribute.String("error.type", e.Error.Code))
	}
	start := e.Started
	if start.IsZero() {
		start = e.Time.Add(-e.Latency)
	}
	_, sp := t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...),
		trace.WithSpanKind(trace.SpanKindInternal))
	if e.Error != nil {
		sp.SetStatus(codes.Error, e.Error.Message)
	}
	sp.End(trace.WithTimestamp(e.Time))
}
