package tracing

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// Handler wraps h in a server span per request, named for the route the
// request matched ("POST /v1/sessions/{id}/invoke"); a request that
// arrives with a traceparent joins its trace. Health checks and metrics
// scrapes are not traced. With tp off, h is returned as it is.
func Handler(tp trace.TracerProvider, h http.Handler) http.Handler {
	if !On(tp) {
		return h
	}
	return otelhttp.NewHandler(h, "outboxd",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(Propagator),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			if r.Pattern != "" {
				return r.Pattern
			}
			return r.Method
		}),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return false
			}
			return true
		}),
	)
}

// Transport wraps base so that a request made inside a span gets a client
// span of its own and carries its W3C traceparent to the server. A request
// outside any span (tracing off) goes straight to base. The spans use the
// tracer provider of the span they are made in, so Transport needs none.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{
		base: base,
		traced: otelhttp.NewTransport(base,
			otelhttp.WithPropagators(Propagator),
			otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "HTTP " + r.Method }),
		),
	}
}

type transport struct {
	base, traced http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() {
		return t.base.RoundTrip(r)
	}
	return t.traced.RoundTrip(r)
}

// CloseIdleConnections closes base's idle connections, as
// http.Client.CloseIdleConnections expects of a transport.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Unwrap returns the transport that Transport wrapped.
func (t *transport) Unwrap() http.RoundTripper { return t.base }
