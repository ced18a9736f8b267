package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Protocols of the OTLP exporter.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config configures tracing (tracing.*). The standard OTEL_* environment
// variables configure what is not set here: the exporter reads
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS and the rest
// itself, the SDK OTEL_TRACES_SAMPLER and OTEL_BSP_*, the resource
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
type Config struct {
	// Enabled turns tracing on. Default false: no exporter, a no-op
	// provider. OTEL_TRACES_EXPORTER=otlp turns it on as well, and
	// OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true off again; the
	// only exporter is OTLP, so any other OTEL_TRACES_EXPORTER is refused.
	Enabled bool
	// Endpoint is the OTLP collector's base URL, as
	// OTEL_EXPORTER_OTLP_ENDPOINT: http://collector:4318 for http/protobuf
	// (/v1/traces is appended), http://collector:4317 for grpc; https
	// for TLS. Default: the OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT
	// variables, else localhost.
	Endpoint string
	// Protocol is http/protobuf or grpc. Default:
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL,
	// else http/protobuf.
	Protocol string
	// SampleRatio is the share of new traces recorded, from 0 (exclusive)
	// to 1; a request that arrives with a sampled traceparent is recorded
	// whatever the ratio. Default: OTEL_TRACES_SAMPLER, else every trace.
	SampleRatio float64
	// ServiceName names the process in its spans. Default
	// OTEL_SERVICE_NAME, else "outboxd".
	ServiceName string
	// Logger receives, at warn level, what the exporter could not do (a
	// collector unreachable or refusing spans), in the process's log
	// format. Nil leaves OpenTelemetry's default: a plain line on
	// standard error through the log package, whatever log.format says.
	Logger *slog.Logger
}

// WithDefaults returns a copy with unset fields defaulted from the
// OTEL_* variables that the SDK does not read itself.
func (c *Config) WithDefaults() *Config {
	out := *c
	if out.Protocol == "" {
		out.Protocol = firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if out.Protocol == "" {
		out.Protocol = ProtocolHTTP
	}
	if out.ServiceName == "" {
		out.ServiceName = os.Getenv("OTEL_SERVICE_NAME")
	}
	if out.ServiceName == "" {
		out.ServiceName = "outboxd"
	}
	switch os.Getenv("OTEL_TRACES_EXPORTER") {
	case "otlp":
		out.Enabled = true
	case "none":
		out.Enabled = false
	}
	if disabled, _ := strconv.ParseBool(os.Getenv("OTEL_SDK_DISABLED")); disabled {
		out.Enabled = false
	}
	return &out
}

// checkExporter refuses an OTEL_TRACES_EXPORTER other than the one
// exporter outboxd has, rather than export nothing without a word.
func checkExporter() error {
	switch v := os.Getenv("OTEL_TRACES_EXPORTER"); v {
	case "", "otlp", "none":
		return nil
	default:
		return fmt.Errorf("OTEL_TRACES_EXPORTER=%s: outboxd exports traces with OTLP only (otlp, or none to turn tracing off)", v)
	}
}

// checkSampleRatio refuses a ratio outside 0 to 1, NaN included (which
// every comparison lets through, and which recorded every trace).
func (c *Config) checkSampleRatio() error {
	if !(c.SampleRatio >= 0 && c.SampleRatio <= 1) {
		return fmt.Errorf("tracing.sample_ratio must be between 0 and 1 (0: every trace, or OTEL_TRACES_SAMPLER), not %v", c.SampleRatio)
	}
	return nil
}

func (c *Config) validate() error {
	switch c.Protocol {
	case ProtocolHTTP, ProtocolGRPC:
	default:
		return fmt.Errorf("tracing.protocol must be %s or %s, not %q", ProtocolHTTP, ProtocolGRPC, c.Protocol)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		switch {
		case err != nil:
			// Not quoted: what does not parse may hold a password.
			return errors.New("tracing.endpoint must be an http:// or https:// URL, and does not parse as a URL")
		case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			// Quoted with its password, if any, as xxxxx.
			return fmt.Errorf("tracing.endpoint must be an http:// or https:// URL, not %q", u.Redacted())
		}
	}
	return nil
}

// Shutdown flushes the spans not yet exported and stops the exporter.
type Shutdown func(context.Context) error

// New returns the process's tracer provider and its shutdown. With tracing
// off it is a no-op provider (On reports false) and shutdown does nothing.
func New(ctx context.Context, config *Config) (trace.TracerProvider, Shutdown, error) {
	if err := checkExporter(); err != nil {
		return nil, nil, err
	}
	cfg := config.WithDefaults()
	// Refused with tracing off as well: a bad ratio that starts the
	// daemon today stops it the day tracing is turned on.
	if err := cfg.checkSampleRatio(); err != nil {
		return nil, nil, err
	}
	if !cfg.Enabled {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	if logger := cfg.Logger; logger != nil {
		// OpenTelemetry's handler of the errors it cannot return (a batch
		// the collector did not take) is process-wide.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			logger.Warn("exporting traces failed", "error", err)
		}))
	}
	exporter, err := newExporter(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	res, err := newResource(ctx, cfg)
	if err != nil {
		_ = exporter.Shutdown(ctx)
		return nil, nil, err
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithBatcher(scrubbed{exporter}),
		sdktrace.WithResource(res),
	}
	if cfg.SampleRatio > 0 {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return tp, tp.Shutdown, nil
}

// newResource describes the process: OTEL_RESOURCE_ATTRIBUTES, the host,
// the SDK, and service.name.
func newResource(ctx context.Context, cfg *Config) (*resource.Resource, error) {
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	// tracing.service_name wins over OTEL_SERVICE_NAME, as the
	// configuration wins over the environment everywhere else.
	res, err = resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	return res, nil
}

func newExporter(ctx context.Context, cfg *Config) (sdktrace.SpanExporter, error) {
	switch cfg.Protocol {
	case ProtocolGRPC:
		var opts []otlptracegrpc.Option
		if cfg.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	default:
		var opts []otlptracehttp.Option
		if cfg.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(cfg.Endpoint, "/")+"/v1/traces"))
		}
		return otlptracehttp.New(ctx, opts...)
	}
}

// On reports whether tp records spans: false for nil and for the no-op
// provider New returns when tracing is off.
func On(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider:
		return false
	}
	return true
}

// Propagator is the one propagation format outboxd reads and writes: W3C
// Trace Context (traceparent, tracestate).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Traceparent is the W3C traceparent of ctx's span, or "" when ctx
// carries none.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// Parse returns the span context a traceparent names (remote), invalid
// when s is empty or malformed.
func Parse(s string) trace.SpanContext {
	if s == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	return trace.SpanContextFromContext(ctx)
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}
