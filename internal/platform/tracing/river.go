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

// RiverMiddleware is the River middleware of a traced process: a work span
// for each job (otelriver: river.work/<kind>) whose parent is the trace
// context the job's metadata carries (JobMetadata), and an insert span for
// each insert. Nil with tp off.
func RiverMiddleware(tp trace.TracerProvider) []rivertype.Middleware {
	if !On(tp) {
		return nil
	}
	return []rivertype.Middleware{
		&jobParent{},
		otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
			TracerProvider:              tp,
			MeterProvider:               metricnoop.NewMeterProvider(),
			EnableWorkSpanJobKindSuffix: true,
		}),
	}
}

// jobParent puts the trace context of a job's metadata in the context its
// work starts from, so that the work span (started inside) is its child:
// the job joins the trace of the request that created it, in whichever
// process and at whichever attempt it runs.
type jobParent struct {
	river.MiddlewareDefaults
}

func (*jobParent) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	if sc := fromMetadata(job.Metadata); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return doInner(ctx)
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
