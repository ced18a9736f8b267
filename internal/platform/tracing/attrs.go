package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of outboxd's own spans: ids, source, action, mode,
// status and error codes, never parameters or results.
const (
	AttrInvocationID   attribute.Key = "outboxd.invocation_id"
	AttrOrganizationID attribute.Key = "outboxd.organization_id"
	AttrSourceID       attribute.Key = "outboxd.source_id"
	AttrActionID       attribute.Key = "outboxd.action_id"
	AttrOrigin         attribute.Key = "outboxd.origin"
	AttrMode           attribute.Key = "outboxd.mode"
	AttrStatus         attribute.Key = "outboxd.status"
	AttrAttempt        attribute.Key = "outboxd.attempt"
	AttrErrorCode      attribute.Key = "outboxd.error_code"
	AttrDecision       attribute.Key = "outboxd.decision"
)

// Fail marks span failed with code, an error code such as
// "rate_limited"; never an error's text, which may quote parameters.
func Fail(span trace.Span, code string) {
	if !span.IsRecording() {
		return
	}
	span.SetStatus(codes.Error, "")
	if code != "" {
		span.SetAttributes(AttrErrorCode.String(code))
	}
}
