// Package telemetry turns the runtime's events into OpenTelemetry spans and
// Prometheus metrics. Both are reach.Recorders: combine them with
// reach.Recorders.
//
// Spans: one per frame, whose span id is the frame id and whose trace id is
// the root request's (random per root request), so a nested model call is
// the child of the tool call that made it, across sub-agents, and one per
// root request above them, by the GenAI, MCP and HTTP semantic conventions
// (see [Tracer]).
package telemetry

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentreach/reach"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
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
	// are dropped and counted (never blocking a call). If zero, the
	// OpenTelemetry variable OTEL_BSP_MAX_QUEUE_SIZE (a whole number above
	// zero; the SDK's batcher behind takes it too), else 8192.
	QueueSize int
	// Sync exports each span as it ends (tests); otherwise spans are batched.
	Sync bool
	// Service is the service.name when OTEL_SERVICE_NAME does not name one;
	// if "", "reach". Version is the service.version, if known.
	// OTEL_RESOURCE_ATTRIBUTES adds to and overrides both.
	Service, Version string
	// Served says that the frames at the top of a request are calls that
	// came in over MCP or HTTP (the gateway): their spans are SERVER spans,
	// with a SERVER span above those that are CLIENT spans themselves.
	Served bool
	// Peer says where a frame's call went; if nil, model frames are CLIENT
	// spans to an unnamed server and tool frames INTERNAL.
	Peer func(e *reach.Event) Peer
}

// Peer is where a frame's call went, for its span's kind and attributes.
type Peer struct {
	// Remote: the call left the process (a CLIENT span); tool frames only,
	// model frames always are.
	Remote bool
	// Provider is a model frame's gen_ai.provider.name ("openai"); empty
	// for none.
	Provider string
	// Address and Port are the server's (server.address, server.port);
	// Transport is the network.transport ("pipe" for a stdio upstream).
	Address   string
	Port      int
	Transport string
}

// Tracer is a reach.Recorder that makes a span of every frame, and a
// reach.RequestObserver that makes one invoke_agent span of every root
// request, which the request's top frames are children of (or, when a call
// names a span in another process as its parent, that span). Spans follow
// the OpenTelemetry GenAI, MCP and HTTP semantic conventions: model frames
// are CLIENT "chat MODEL" spans with gen_ai.usage.input_tokens and
// output_tokens; tool frames INTERNAL "execute_tool NAME", or CLIENT
// "tools/call NAME" when the tool is another server's; with
// TracerOptions.Served, the calls that came in are SERVER spans. A call
// waiting for approval is not an error.
//
// Spans are made off the call path, from a bounded queue: what does not fit
// is dropped and counted (Drops), and so are the spans the exporter fails
// to send, so that a full queue or a down collector shows in the metrics
// rather than silently.
type Tracer struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	opts    TracerOptions
	queue   chan item
	mu      sync.RWMutex // held to send on queue, and (exclusively) to close it
	closed  bool
	dropped atomic.Int64 // events not queued (queue full, or after Shutdown)
	failed  atomic.Int64 // spans the exporter failed to send
	sent    atomic.Int64 // spans the exporter sent
	ended   atomic.Int64 // spans made (ended), to be exported
	pending atomic.Int64 // queued or being turned into a span
	done    chan struct{}
	once    sync.Once

	// Read and written by the loop goroutine only.
	requests map[string]*reqSpan
}

// item is one thing the loop turns into spans: a frame's event, or a
// request that began or ended.
type item struct {
	e     *reach.Event
	req   *reach.Request
	ended bool
}

// reqSpan is what the loop knows of a root request whose span is not made
// yet.
type reqSpan struct {
	trace          trace.TraceID
	id, agent      string
	started        time.Time
	remote         trace.SpanID
	tokens         int64
	inTok, outTok  int64
	frames, refuse int
}

// maxOpenRequests bounds the root requests whose span waits for their end;
// beyond it, the oldest is ended (its span made) early.
const maxOpenRequests = 100000

// NewTracer returns a Tracer exporting to exp. Call Shutdown to flush.
func NewTracer(exp sdktrace.SpanExporter, o *TracerOptions) *Tracer {
	var opts TracerOptions
	if o != nil {
		opts = *o
	}
	if opts.QueueSize == 0 {
		opts.QueueSize = 8192
		if n, err := strconv.Atoi(os.Getenv("OTEL_BSP_MAX_QUEUE_SIZE")); err == nil && n > 0 {
			opts.QueueSize = n
		}
	}
	t := &Tracer{opts: opts, queue: make(chan item, opts.QueueSize), done: make(chan struct{}), requests: map[string]*reqSpan{}}
	exp = countingExporter{exp, &t.failed, &t.sent}
	var proc sdktrace.SpanProcessor
	if opts.Sync {
		proc = sdktrace.NewSimpleSpanProcessor(exp)
	} else {
		// Blocking: the batcher must not drop silently; our own queue in
		// front of it drops, and counts.
		proc = sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithBlocking())
	}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(idGenerator{}), sdktrace.WithSpanProcessor(endCounter{&t.ended}), sdktrace.WithSpanProcessor(proc),
		sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithResource(Resource(opts.Service, opts.Version)))
	t.tracer = t.tp.Tracer("github.com/agentreach/reach")
	go t.loop()
	return t
}

// Resource describes the process to the collector: service.name from
// OTEL_SERVICE_NAME, else service ("reach" if empty); service.version;
// what OTEL_RESOURCE_ATTRIBUTES adds; and the SDK's own attributes.
func Resource(service, version string) *resource.Resource {
	attrs := []attribute.KeyValue{attribute.String("service.name", cmp.Or(service, "reach"))}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	r, err := resource.New(context.Background(), resource.WithAttributes(attrs...), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil { // a malformed OTEL_RESOURCE_ATTRIBUTES: keep what was read
		otel.Handle(err)
	}
	return r
}

// countingExporter counts the spans its exporter failed to send: the SDK
// drops them after logging, and nothing else would tell.
type countingExporter struct {
	sdktrace.SpanExporter
	failed, sent *atomic.Int64
}

func (c countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		c.failed.Add(int64(len(spans)))
	} else {
		c.sent.Add(int64(len(spans)))
	}
	return err
}

// endCounter counts the spans made: those neither sent nor failed when a
// shutdown's deadline passes are the batcher's, lost with it.
type endCounter struct{ ended *atomic.Int64 }

func (endCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c endCounter) OnEnd(sdktrace.ReadOnlySpan)                   { c.ended.Add(1) }
func (endCounter) Shutdown(context.Context) error                  { return nil }
func (endCounter) ForceFlush(context.Context) error                { return nil }

// Record implements reach.Recorder: it queues the event without blocking.
// After Shutdown (a call may end after its gateway closed) the event is
// dropped and counted.
func (t *Tracer) Record(_ context.Context, e *reach.Event) {
	if e.Frame == 0 {
		return // a stop, not a frame
	}
	t.enqueue(item{e: e})
}

// RequestBegan implements reach.RequestObserver.
func (t *Tracer) RequestBegan(_ context.Context, r *reach.Request) {
	if r.Parent() == nil {
		t.enqueue(item{req: r})
	}
}

// RequestEnded implements reach.RequestObserver: the request's span is
// made.
func (t *Tracer) RequestEnded(_ context.Context, r *reach.Request) {
	if r.Parent() == nil {
		t.enqueue(item{req: r, ended: true})
	}
}

func (t *Tracer) enqueue(it item) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		t.dropped.Add(1)
		return
	}
	t.pending.Add(1)
	select {
	case t.queue <- it:
	default:
		t.pending.Add(-1)
		t.dropped.Add(1)
	}
}

// Dropped returns how many spans were lost: frames not turned into spans
// because the queue was full or the Tracer was shut down, and spans the
// exporter failed to send.
func (t *Tracer) Dropped() int64 { q, f := t.Drops(); return q + f }

// Drops returns the spans lost because the queue was full (or the Tracer
// shut down), and those the exporter failed to send.
func (t *Tracer) Drops() (queueFull, exportFailed int64) { return t.dropped.Load(), t.failed.Load() }

// Shutdown makes the spans of the requests still open (ending now), and
// flushes the queue and the exporter. If ctx ends first (a collector slow
// or unreachable), the spans not exported by then are lost with the
// process: the error says how many (LostError), so that the caller can
// say so rather than lose them silently.
func (t *Tracer) Shutdown(ctx context.Context) error {
	t.once.Do(func() {
		t.mu.Lock()
		t.closed = true
		close(t.queue)
		t.mu.Unlock()
	})
	var err error
	select {
	case <-t.done:
		err = t.tp.Shutdown(ctx)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		return nil
	}
	// Events not yet spans, and spans made but neither sent nor failed
	// (failed ones are counted already): lost.
	lost := t.pending.Load() + t.ended.Load() - t.sent.Load() - t.failed.Load()
	if lost <= 0 {
		return err
	}
	return &LostError{Spans: lost, Err: err}
}

// LostError is Shutdown's error when spans were not exported before its
// context ended: they are lost.
type LostError struct {
	Spans int64 // spans (or the events they would have been made of) not exported
	Err   error
}

func (e *LostError) Error() string {
	return fmt.Sprintf("%d spans not exported before the shutdown's deadline, lost (is the OTLP collector slow or down?): %v", e.Spans, e.Err)
}

func (e *LostError) Unwrap() error { return e.Err }

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
	for it := range t.queue {
		switch {
		case it.e != nil:
			t.span(it.e)
		case it.ended:
			t.endRequest(it.req.Trace(), it.req.ID(), string(it.req.State()), time.Now())
		default:
			t.beginRequest(it.req)
		}
		t.pending.Add(-1)
	}
	now := time.Now()
	for _, k := range slices.Sorted(maps.Keys(t.requests)) {
		rs := t.requests[k]
		t.endRequest(rs.trace, rs.id, "running", now)
	}
}

func requestKey(tid trace.TraceID, id string) string { return string(tid[:]) + id }

// RequestSpanID returns the span id of a root request's invoke_agent span.
func RequestSpanID(tid trace.TraceID, request string) trace.SpanID {
	sum := sha256.Sum256([]byte("reach/request/" + string(tid[:]) + request))
	var id trace.SpanID
	copy(id[:], sum[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// serverSpanID is the id of the SERVER span above a top frame whose own
// span is a CLIENT one.
func serverSpanID(f reach.FrameID) trace.SpanID {
	sum := sha256.Sum256([]byte("reach/server/" + f.String()))
	var id trace.SpanID
	copy(id[:], sum[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

func (t *Tracer) beginRequest(r *reach.Request) {
	tid := trace.TraceID(r.Trace())
	k := requestKey(tid, r.ID())
	if _, ok := t.requests[k]; ok {
		return
	}
	if len(t.requests) >= maxOpenRequests {
		var oldest *reqSpan
		for _, rs := range t.requests {
			if oldest == nil || rs.started.Before(oldest.started) {
				oldest = rs
			}
		}
		t.endRequest(oldest.trace, oldest.id, "running", time.Now())
	}
	t.requests[k] = &reqSpan{trace: tid, id: r.ID(), agent: r.Agent(), started: r.Started()}
}

// endRequest makes the span of a root request the loop knows.
func (t *Tracer) endRequest(tid trace.TraceID, id, state string, end time.Time) {
	k := requestKey(tid, id)
	rs, ok := t.requests[k]
	if !ok {
		return
	}
	delete(t.requests, k)
	ctx := context.WithValue(context.Background(), idsKey{}, ids{trace: tid, span: RequestSpanID(tid, id)})
	if rs.remote.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: rs.remote, TraceFlags: trace.FlagsSampled}))
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", rs.agent),
		attribute.String("gen_ai.conversation.id", id),
		attribute.String("reach.request", id),
		attribute.String("reach.state", state),
		attribute.Int("reach.frames", rs.frames),
		attribute.Int("reach.refusals", rs.refuse),
	}
	if rs.inTok+rs.outTok > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.usage.input_tokens", rs.inTok), attribute.Int64("gen_ai.usage.output_tokens", rs.outTok))
	}
	_, sp := t.tracer.Start(ctx, "invoke_agent "+rs.agent, trace.WithTimestamp(rs.started), trace.WithAttributes(attrs...),
		trace.WithSpanKind(trace.SpanKindInternal))
	sp.End(trace.WithTimestamp(end))
}

// pendingApproval reports whether e is a call held for a human's decision:
// an outcome, not an error.
func pendingApproval(e *reach.Event) bool {
	return e.State == reach.AwaitingApproval || e.Error != nil && e.Error.Code == "approval_pending"
}

// span makes the span of one frame (and, for a call that came in and went
// out again, the SERVER span above it).
func (t *Tracer) span(e *reach.Event) {
	tid := TraceID(e)
	var peer Peer
	if t.opts.Peer != nil {
		peer = t.opts.Peer(e)
	}
	kind := trace.SpanKindInternal
	op, name := "execute_tool", "execute_tool "+e.Name
	attrs := []attribute.KeyValue{
		attribute.String("reach.request", e.Request),
		attribute.String("reach.frame", e.Frame.String()),
		attribute.String("reach.state", e.State.String()),
		attribute.String("gen_ai.agent.name", e.Agent),
	}
	switch e.Kind {
	case reach.ModelFrame:
		kind, op, name = trace.SpanKindClient, "chat", "chat "+e.Name
		attrs = append(attrs, attribute.String("gen_ai.request.model", e.Name),
			attribute.String("gen_ai.response.model", cmp.Or(e.ResponseModel, e.Name)),
			attribute.Int64("gen_ai.usage.input_tokens", e.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", e.OutputTokens))
		if peer.Provider != "" {
			attrs = append(attrs, attribute.String("gen_ai.provider.name", peer.Provider))
		}
		if e.Cost > 0 {
			attrs = append(attrs, attribute.Float64("reach.cost", e.Cost))
		}
	case reach.DelegateFrame:
		op, name = "invoke_agent", "invoke_agent "+e.Name
	default:
		attrs = append(attrs, attribute.String("gen_ai.tool.name", e.Name), attribute.String("mcp.method.name", "tools/call"))
		if e.CallID != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.call.id", e.CallID))
		}
		if peer.Remote {
			kind, name = trace.SpanKindClient, "tools/call "+e.Name
		}
	}
	if kind == trace.SpanKindClient {
		if peer.Address != "" {
			attrs = append(attrs, attribute.String("server.address", peer.Address))
			if peer.Port > 0 {
				attrs = append(attrs, attribute.Int("server.port", peer.Port))
			}
		}
		if peer.Transport != "" {
			attrs = append(attrs, attribute.String("network.transport", peer.Transport))
		}
	}
	attrs = append(attrs, attribute.String("gen_ai.operation.name", op))
	failed := e.Error != nil && !pendingApproval(e)
	if failed {
		attrs = append(attrs, attribute.String("reach.guard", e.Error.Guard), attribute.String("error.type", e.Error.Code))
	}
	if pendingApproval(e) {
		attrs = append(attrs, attribute.String("reach.approval", "pending"))
	}
	start := e.Started
	if start.IsZero() {
		start = e.Time.Add(-e.Latency)
	}

	// The parent: the frame's parent frame; for a top frame, the span of
	// the caller in another process if it named one, else its request's.
	var parent trace.SpanID
	top := e.Parent == 0
	switch {
	case !top:
		parent = SpanID(e.Parent)
	case e.RemoteParent != ([8]byte{}):
		parent = e.RemoteParent
	default:
		parent = RequestSpanID(tid, e.Root)
	}
	if top {
		k := requestKey(tid, e.Request)
		rs := t.requests[k]
		if rs == nil && e.Request == e.Root && len(t.requests) < maxOpenRequests {
			// A request that began before the Tracer saw it: its span
			// starts with its first frame.
			rs = &reqSpan{trace: tid, id: e.Request, agent: e.Agent, started: start}
			t.requests[k] = rs
		}
		if rs != nil && !rs.remote.IsValid() && e.RemoteParent != ([8]byte{}) {
			rs.remote = e.RemoteParent
		}
	}
	if rs := t.requests[requestKey(tid, e.Root)]; rs != nil {
		rs.frames++
		rs.inTok += e.InputTokens
		rs.outTok += e.OutputTokens
		if e.State == reach.Refused {
			rs.refuse++
		}
	}
	if top && t.opts.Served {
		if kind == trace.SpanKindClient {
			// The call came in and went out again: a SERVER span for the
			// one, above the CLIENT span of the other.
			sname, sattrs := "tools/call "+e.Name, []attribute.KeyValue{
				attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", e.Name),
				attribute.String("gen_ai.operation.name", "execute_tool")}
			if e.Kind == reach.ModelFrame {
				route := cmp.Or(e.Route, "/v1/chat/completions")
				sname, sattrs = "POST "+route, []attribute.KeyValue{
					attribute.String("http.request.method", "POST"), attribute.String("http.route", route),
					attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", e.Name)}
			}
			sattrs = append(sattrs, attribute.String("reach.request", e.Request), attribute.String("reach.frame", e.Frame.String()))
			if failed {
				sattrs = append(sattrs, attribute.String("error.type", e.Error.Code))
			}
			sid := serverSpanID(e.Frame)
			t.emit(tid, sid, parent, sname, trace.SpanKindServer, start, e.Time, sattrs, failed, e)
			parent = sid
		} else {
			kind, name = trace.SpanKindServer, "tools/call "+e.Name
			if e.Kind == reach.DelegateFrame {
				name = "invoke_agent " + e.Name
			}
		}
	}
	t.emit(tid, SpanID(e.Frame), parent, name, kind, start, e.Time, attrs, failed, e)
}

func (t *Tracer) emit(tid trace.TraceID, id, parent trace.SpanID, name string, kind trace.SpanKind, start, end time.Time,
	attrs []attribute.KeyValue, failed bool, e *reach.Event) {
	ctx := context.WithValue(context.Background(), idsKey{}, ids{trace: tid, span: id})
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: parent, TraceFlags: trace.FlagsSampled}))
	}
	_, sp := t.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...), trace.WithSpanKind(kind))
	if failed {
		sp.SetStatus(codes.Error, e.Error.Message)
	}
	sp.End(trace.WithTimestamp(end))
}
