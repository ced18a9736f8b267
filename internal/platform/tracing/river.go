package tracing

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// metadataKey is the River job metadata key of the trace context a job
// joins; otelriver uses the same key.
const metadataKey = "traceparent"

// JobMetadata is the River job metadata that makes a job's spans join the
// trace of traceparent (see RiverMiddleware); nil when traceparent is "".
func JobMetadata(traceparent string) []byte {
	if traceparent == "" {
		return nil
	}
	b, _ := json.Marshal(map[string]string{metadataKey: traceparent})
	return b
}

// RiverMiddleware is the River middleware of a traced process. A job whose
// metadata carries a trace context (JobMetadata) gets a work span
// (otelriver's river.work/<kind>) that is a child of it, so the job joins
// the trace of the request that created it, in whichever process and at
// whichever attempt it runs; an insert made inside a trace gets a span
// (river.insert_many). Jobs and inserts outside any trace (the periodic
// relay, sweep and maintenance jobs) are not traced: they would fill the
// collector with a root trace every second. Nil with tp off.
func RiverMiddleware(tp trace.TracerProvider) []rivertype.Middleware {
	if !On(tp) {
		return nil
	}
	return []rivertype.Middleware{&riverMiddleware{otel: otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		TracerProvider:              tp,
		MeterProvider:               metricnoop.NewMeterProvider(),
		EnableWorkSpanJobKindSuffix: true,
	})}}
}

type riverMiddleware struct {
	river.MiddlewareDefaults
	otel *otelriver.Middleware
}

func (m *riverMiddleware) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return doInner(ctx)
	}
	return m.otel.InsertMany(ctx, params, doInner)
}

func (m *riverMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	sc := fromMetadata(job.Metadata)
	if !sc.IsValid() {
		return doInner(ctx)
	}
	return m.otel.Work(trace.ContextWithRemoteSpanContext(ctx, sc), job, doInner)
}

func fromMetadata(metadata []byte) trace.SpanContext {
	if !bytes.Contains(metadata, []byte(`"`+metadataKey+`"`)) {
		return trace.SpanContext{}
	}
	var m struct {
		Traceparent string `json:"traceparent"`
	}
	if json.Unmarshal(metadata, &m) != nil {
		return trace.SpanContext{}
	}
	return Parse(m.Traceparent)
}
