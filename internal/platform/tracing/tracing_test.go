package tracing_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/internal/platform/tracing/tracingtest"
)

// upstream is a server that records the traceparent of each request.
type upstream struct {
	mu           sync.Mutex
	traceparents []string
}

func newUpstream(t *testing.T) (*upstream, string) {
	u := &upstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.traceparents = append(u.traceparents, r.Header.Get("traceparent"))
		u.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return u, srv.URL
}

func (u *upstream) got() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.traceparents...)
}

// service is an API with one route that calls upstream through
// tracing.Transport.
func service(t *testing.T, tp trace.TracerProvider, upstreamURL string) string {
	client := &http.Client{Transport: tracing.Transport(http.DefaultTransport)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /things/{id}", func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, upstreamURL+"/repos/secret-owner?q=secret-param", nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		w.WriteHeader(http.StatusOK)
	})
	srv := httptest.NewServer(tracing.Handler(tp, mux))
	t.Cleanup(srv.Close)
	return srv.URL
}

func get(t *testing.T, url string) {
	resp, err := http.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestNew_Off(t *testing.T) {
	t.Parallel()

	receiver := tracingtest.NewReceiver(t)
	tp, shutdown, err := tracing.New(context.Background(), &tracing.Config{Endpoint: receiver.URL})
	require.NoError(t, err)
	require.False(t, tracing.On(tp))
	require.Nil(t, tracing.RiverMiddleware(tp))

	mux := http.NewServeMux()
	require.Same(t, mux, tracing.Handler(tp, mux), "off, the handler is not wrapped")

	up, upURL := newUpstream(t)
	get(t, service(t, tp, upURL)+"/things/1")
	require.NoError(t, shutdown(context.Background()))
	require.Equal(t, []string{""}, up.got(), "off, no traceparent goes out")
	require.Zero(t, receiver.Requests(), "off, nothing is exported")

	ctx, span := tracing.NewTracer(tp, "test").Start(context.Background(), "x")
	require.False(t, span.IsRecording())
	require.Empty(t, tracing.Traceparent(ctx))
}

// TestNew_OffAllocatesNothing is not parallel: AllocsPerRun counts every
// goroutine's allocations.
func TestNew_OffAllocatesNothing(t *testing.T) { //nolint:paralleltest
	tp, _, err := tracing.New(context.Background(), &tracing.Config{})
	require.NoError(t, err)
	tracer := tracing.NewTracer(tp, "test")
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		ctx, span := tracer.Start(ctx, "x")
		if span.IsRecording() {
			span.SetAttributes(tracing.AttrStatus.String("x"))
		}
		tracing.Fail(span, "code")
		_ = tracing.Traceparent(ctx)
		span.End()
	})
	require.Zero(t, allocs)
}

// TestNew_ExportFailuresGoToTheLogger is not parallel: it reads what the
// log package writes. A batch the collector did not take was written by
// OpenTelemetry's default handler as a plain line through the log
// package ("2026/11/27 18:06:43 traces export: ..."), a line that is not
// JSON among log.format json's and that no log.level silences; it is now
// a warning of the process's logger.
func TestNew_ExportFailuresGoToTheLogger(t *testing.T) { //nolint:paralleltest
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String() // nothing listens there
	require.NoError(t, ln.Close())

	var std bytes.Buffer
	defer log.SetOutput(log.Writer())
	log.SetOutput(&std)
	var logs bytes.Buffer
	tp, shutdown, err := tracing.New(context.Background(), &tracing.Config{
		Enabled: true, Endpoint: closed, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	require.NoError(t, err)
	_, span := tracing.NewTracer(tp, "test").Start(context.Background(), "x")
	span.End()
	_ = shutdown(context.Background()) // the last batch is exported, and refused

	require.Empty(t, std.String(), "nothing goes through the log package")
	require.Contains(t, logs.String(), `"level":"WARN","msg":"exporting traces failed"`)
	require.Contains(t, logs.String(), "connection refused")
}

func TestNew_HTTP(t *testing.T) {
	t.Parallel()

	receiver := tracingtest.NewReceiver(t)
	tp, shutdown, err := tracing.New(context.Background(), &tracing.Config{
		Enabled: true, Endpoint: receiver.URL, ServiceName: "outboxd-test",
	})
	require.NoError(t, err)
	require.True(t, tracing.On(tp))

	up, upURL := newUpstream(t)
	get(t, service(t, tp, upURL)+"/things/1?filter=secret-filter")
	require.NoError(t, shutdown(context.Background()))

	spans := receiver.Spans()
	server := tracingtest.Named(spans, "GET /things/{id}")
	require.Len(t, server, 1, "the server span is named for its route: %+v", spans)
	require.Equal(t, "outboxd-test", server[0].Service)
	require.Equal(t, "SPAN_KIND_SERVER", server[0].Kind)
	client := tracingtest.Named(spans, "HTTP GET")
	require.Len(t, client, 1, "%+v", spans)
	require.Equal(t, server[0].TraceID, client[0].TraceID)
	require.Equal(t, server[0].SpanID, client[0].ParentSpanID)

	// The upstream got the client span's traceparent.
	traceparents := up.got()
	require.Len(t, traceparents, 1)
	sc := tracing.Parse(traceparents[0])
	require.True(t, sc.IsValid(), traceparents[0])
	require.Equal(t, client[0].TraceID, sc.TraceID().String())
	require.Equal(t, client[0].SpanID, sc.SpanID().String())

	// Nothing of the URLs' paths and queries leaves in a span.
	for _, s := range spans {
		for k, v := range s.Attributes {
			require.NotContains(t, v, "secret", "%s: %s", s.Name, k)
		}
		require.NotContains(t, s.Attributes, "url.query")
	}
	require.Equal(t, upURL, client[0].Attributes["url.full"])
}

func TestNew_GRPC(t *testing.T) {
	t.Parallel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	got := make(chan *collectorpb.ExportTraceServiceRequest, 10)
	srv := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(srv, &grpcReceiver{got: got})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)

	tp, shutdown, err := tracing.New(context.Background(), &tracing.Config{
		Enabled: true, Endpoint: "http://" + ln.Addr().String(), Protocol: tracing.ProtocolGRPC,
	})
	require.NoError(t, err)
	ctx, span := tracing.NewTracer(tp, "test").Start(context.Background(), "outboxd.enqueue")
	span.End()
	require.NoError(t, shutdown(context.Background()))

	req := <-got
	s := req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0]
	require.Equal(t, "outboxd.enqueue", s.GetName())
	require.Equal(t, trace.SpanContextFromContext(ctx).TraceID().String(), hex.EncodeToString(s.GetTraceId()))
}

type grpcReceiver struct {
	collectorpb.UnimplementedTraceServiceServer
	got chan *collectorpb.ExportTraceServiceRequest
}

func (g *grpcReceiver) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	g.got <- req
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func TestNew_Invalid(t *testing.T) {
	t.Parallel()

	for _, cfg := range []tracing.Config{
		{Enabled: true, Protocol: "thrift"},
		{Enabled: true, SampleRatio: 2},
		{Enabled: true, Endpoint: "collector:4318"},
	} {
		_, _, err := tracing.New(context.Background(), &cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

// TestNew_SampleRatioRefusedWhateverTheSwitch: a sample ratio outside 0
// to 1 was refused only with tracing on, so a configuration that started
// for months stopped starting the day tracing was turned on; NaN passed
// even then (and recorded every trace). Each is refused, on or off,
// naming the key.
func TestNew_SampleRatioRefusedWhateverTheSwitch(t *testing.T) {
	t.Parallel()

	for _, ratio := range []float64{2, -1, math.NaN(), math.Inf(1)} {
		for _, on := range []bool{false, true} {
			_, _, err := tracing.New(context.Background(), &tracing.Config{Enabled: on, SampleRatio: ratio})
			require.EqualError(t, err, fmt.Sprintf("tracing.sample_ratio must be between 0 and 1 (0: every trace, or OTEL_TRACES_SAMPLER), not %v", ratio), "on: %v", on)
		}
	}
	for _, ratio := range []float64{0, 0.25, 1} {
		tp, shutdown, err := tracing.New(context.Background(), &tracing.Config{SampleRatio: ratio})
		require.NoError(t, err, ratio)
		require.False(t, tracing.On(tp))
		require.NoError(t, shutdown(context.Background()))
	}
}

// TestNew_InvalidEndpointKeepsItsPassword: a tracing.endpoint refused at
// start was quoted whole in the error, the collector's password (or
// token) in it too, into the start's output and whatever keeps it.
func TestNew_InvalidEndpointKeepsItsPassword(t *testing.T) {
	t.Parallel()

	for endpoint, want := range map[string]string{
		"grpc://otel:s3cret-token@collector:4317": `tracing.endpoint must be an http:// or https:// URL, not "grpc://otel:xxxxx@collector:4317"`,
		"http://otel:s3cret-token%zz@collector":   "tracing.endpoint must be an http:// or https:// URL, and does not parse as a URL",
	} {
		_, _, err := tracing.New(context.Background(), &tracing.Config{Enabled: true, Endpoint: endpoint})
		require.EqualError(t, err, want)
		require.NotContains(t, err.Error(), "s3cret")
	}
}

func TestLogHandler(t *testing.T) {
	t.Parallel()

	receiver := tracingtest.NewReceiver(t)
	tp, shutdown, err := tracing.New(context.Background(), &tracing.Config{Enabled: true, Endpoint: receiver.URL})
	require.NoError(t, err)
	t.Cleanup(func() { _ = shutdown(context.Background()) })

	var buf bytes.Buffer
	logger := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	ctx, span := tracing.NewTracer(tp, "test").Start(context.Background(), "x")
	logger.InfoContext(ctx, "inside")
	span.End()
	logger.InfoContext(context.Background(), "outside")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	sc := span.SpanContext()
	require.Contains(t, lines[0], `"trace_id":"`+sc.TraceID().String()+`"`)
	require.Contains(t, lines[0], `"span_id":"`+sc.SpanID().String()+`"`)
	require.NotContains(t, lines[1], "trace_id")
}

// TestNew_TracesExporterVariable: OTEL_TRACES_EXPORTER=otlp turns tracing
// on as tracing.enabled does, none turns it off, and an exporter outboxd
// does not have is refused. Not parallel: it sets the environment.
func TestNew_TracesExporterVariable(t *testing.T) { //nolint:paralleltest
	receiver := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	tp, shutdown, err := tracing.New(context.Background(), &tracing.Config{Endpoint: receiver.URL})
	require.NoError(t, err)
	require.True(t, tracing.On(tp))
	require.NoError(t, shutdown(context.Background()))

	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	tp, _, err = tracing.New(context.Background(), &tracing.Config{Enabled: true, Endpoint: receiver.URL})
	require.NoError(t, err)
	require.False(t, tracing.On(tp))

	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	_, _, err = tracing.New(context.Background(), &tracing.Config{Enabled: true, Endpoint: receiver.URL})
	require.ErrorContains(t, err, "OTEL_TRACES_EXPORTER=zipkin")
}
