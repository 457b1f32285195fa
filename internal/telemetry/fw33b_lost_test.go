package telemetry

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentreach/reach"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// stallingExporter takes an export and does not return until released; it
// says when the first export began.
type stallingExporter struct {
	began   chan struct{}
	once    sync.Once
	release chan struct{}
}

func (s *stallingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	s.once.Do(func() { close(s.began) })
	<-s.release
	return nil
}
func (s *stallingExporter) Shutdown(context.Context) error { return nil }

// TestFW33bShutdownCountsLostSpans: a shutdown whose deadline passes while
// the collector holds the export (the batch exporter's queue is dropped
// with the process) says how many spans were lost, rather than returning
// a bare deadline error that nobody can count.
func TestFW33bShutdownCountsLostSpans(t *testing.T) {
	exp := &stallingExporter{began: make(chan struct{}), release: make(chan struct{})}
	defer close(exp.release)
	tr := NewTracer(exp, nil) // the batch exporter, as served
	rt := reach.New(&reach.Options{Recorder: tr})
	ctx, req, _ := rt.Begin(t.Context(), &reach.RequestOptions{ID: "r"})
	for range 3 {
		_, mf, _ := rt.BeginModel(ctx, "m")
		mf.EndModel(reach.TokenUsage{Input: 1})
	}
	req.End()
	sctx, cancel := context.WithCancel(t.Context())
	go func() { <-exp.began; cancel() }() // the deadline passes while the collector holds the export
	err := tr.Shutdown(sctx)
	var lost *LostError
	if !errors.As(err, &lost) || lost.Spans != 4 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown past its deadline = %v, want a LostError of the 4 spans (three model calls and the request)", err)
	}
}
