// Package tracing sets up OpenTelemetry tracing for outboxd: the tracer
// provider and its OTLP exporter (HTTP or gRPC), and the small pieces the
// rest of the process uses to take part in a trace: an HTTP handler and
// transport, River middleware that joins a job to the trace its metadata
// names, and a slog handler that writes trace_id and span_id.
//
// Tracing is off by default, and free when off: New then returns a no-op
// provider, Handler and RiverMiddleware install nothing, and Transport and
// Tracer pass straight through after one look at the context.
//
// Spans carry ids, source, action, mode, status and error codes, never an
// invocation's parameters or results: the exporter also drops status
// descriptions and exception messages, and cuts URLs down to their scheme
// and host, so that no error text or provider URL leaves in a span.
package tracing
