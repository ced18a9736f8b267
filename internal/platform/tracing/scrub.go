package tracing

import (
	"context"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// scrubbed exports spans without what could carry an invocation's
// parameters or results, whoever wrote them (otelhttp, otelriver): a
// status keeps its code but not its description (an error's text), an
// event loses its exception message, a URL keeps its scheme and host (a
// provider's path and query are made of parameters), and a query string
// is dropped.
type scrubbed struct {
	sdktrace.SpanExporter
}

func (e scrubbed) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = scrubbedSpan{s}
	}
	return e.SpanExporter.ExportSpans(ctx, out)
}

type scrubbedSpan struct {
	sdktrace.ReadOnlySpan
}

func (s scrubbedSpan) Status() sdktrace.Status {
	st := s.ReadOnlySpan.Status()
	st.Description = ""
	return st
}

func (s scrubbedSpan) Attributes() []attribute.KeyValue {
	return scrubAttributes(s.ReadOnlySpan.Attributes())
}

func (s scrubbedSpan) Events() []sdktrace.Event {
	events := s.ReadOnlySpan.Events()
	out := make([]sdktrace.Event, len(events))
	for i, e := range events {
		e.Attributes = scrubAttributes(e.Attributes)
		out[i] = e
	}
	return out
}

// scrubAttributes returns attrs less the free texts and with URLs cut to
// their scheme and host.
func scrubAttributes(attrs []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, kv := range attrs {
		switch kv.Key {
		case "url.query", "exception.message", "exception.stacktrace", "http.request.header.cookie":
			continue
		case "url.full", "http.url":
			kv = attribute.String(string(kv.Key), origin(kv.Value.AsString()))
		}
		out = append(out, kv)
	}
	return out
}

// origin is raw's scheme and host, "" when raw is no URL.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
