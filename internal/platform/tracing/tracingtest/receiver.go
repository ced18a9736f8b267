// Package tracingtest is an in-process OTLP/HTTP receiver for tests: the
// real protobuf payloads of the OTLP exporter, decoded into spans.
package tracingtest

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is what the receiver got of one span.
type Span struct {
	Service      string
	Scope        string
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Kind         string
	// Error is true when the span's status is an error.
	Error bool
	// StatusMessage is the status description, which outboxd never sends.
	StatusMessage string
	Attributes    map[string]string
	Links         []Link
	// EventAttributes are the attributes of the span's events.
	EventAttributes []map[string]string
}

// Link is a span link.
type Link struct {
	TraceID, SpanID string
}

// Receiver is an OTLP/HTTP trace receiver on a loopback server, closed
// when the test ends. Its methods are safe for concurrent use.
type Receiver struct {
	// URL is the base URL to give the exporter (tracing.endpoint or
	// OTEL_EXPORTER_OTLP_ENDPOINT); it receives at URL/v1/traces.
	URL string

	mu       sync.Mutex
	spans    []Span
	requests int
	changed  chan struct{}
}

// NewReceiver starts a receiver.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range export.GetResourceSpans() {
		service := attributes(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				span := Span{
					Service: service, Scope: ss.GetScope().GetName(), Name: s.GetName(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind().String(),
					Error:         s.GetStatus().GetCode().String() == "STATUS_CODE_ERROR",
					StatusMessage: s.GetStatus().GetMessage(),
					Attributes:    attributes(s.GetAttributes()),
				}
				for _, l := range s.GetLinks() {
					span.Links = append(span.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				for _, e := range s.GetEvents() {
					span.EventAttributes = append(span.EventAttributes, attributes(e.GetAttributes()))
				}
				got = append(got, span)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.requests++
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	_, _ = io.Copy(w, bytes.NewReader(out))
}

// Spans returns the spans received so far, in order of arrival.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Requests is how many exports arrived.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Changed returns a channel closed when the next export arrives.
func (r *Receiver) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Trace returns the spans of trace id.
func (r *Receiver) Trace(id string) []Span {
	return slices.DeleteFunc(r.Spans(), func(s Span) bool { return s.TraceID != id })
}

// Named returns the spans called name.
func Named(spans []Span, name string) []Span {
	return slices.DeleteFunc(slices.Clone(spans), func(s Span) bool { return s.Name != name })
}

// WithAttribute returns the spans whose attribute key is value.
func WithAttribute(spans []Span, key, value string) []Span {
	return slices.DeleteFunc(slices.Clone(spans), func(s Span) bool { return s.Attributes[key] != value })
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		out[kv.GetKey()] = valueString(v)
	}
	return out
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	}
	return v.String()
}
