package tracing

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Tracer starts outboxd's own spans, or nothing with tracing off: its zero
// value is off, and Start then costs no allocation.
type Tracer struct {
	t trace.Tracer
}

// NewTracer returns the tracer name of tp, off when tp is.
func NewTracer(tp trace.TracerProvider, name string) Tracer {
	if !On(tp) {
		return Tracer{}
	}
	return Tracer{t: tp.Tracer(name)}
}

// Start starts a span as trace.Tracer.Start does. Off, it returns ctx and
// the no-op span: set attributes only when span.IsRecording().
func (t Tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t.t == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.t.Start(ctx, name, opts...)
}
