package httpsource

import (
	"context"
	"errors"
	"net"

	"github.com/outboxd/outboxd/executors"
)

// Redacted replaces a secret in error texts and stored answers
// (executors.Redacted).
const Redacted = executors.Redacted

// UnknownAction is executors.UnknownAction.
func UnknownAction(source, actionID string) error {
	return executors.UnknownAction(source, actionID)
}

// TransportError classifies err, a failure to get an answer from provider
// (its display name, e.g. "Slack"), by what ended the call: the caller's
// deadline or cancelation, a network timeout, or another network error.
// Whether the provider acted on the request is unknown in every case, so all
// are retryable; ctx's error or err stays reachable with errors.Is.
func TransportError(ctx context.Context, provider string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return &executors.Error{
				Code:      "timeout",
				Message:   provider + " did not answer before the deadline",
				Retryable: true,
				Cause:     ctxErr,
			}
		}
		return &executors.Error{
			Code:      "canceled",
			Message:   "the call to " + provider + " was canceled before it answered",
			Retryable: true,
			Cause:     ctxErr,
		}
	}

	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return &executors.Error{
			Code:      "timeout",
			Message:   "calling " + provider + " timed out: " + err.Error(),
			Retryable: true,
			Cause:     err,
		}
	}
	return &executors.Error{
		Code:      "network_error",
		Message:   "calling " + provider + " failed: " + err.Error(),
		Retryable: true,
		Cause:     err,
	}
}

// Scrub is executors.Scrub: each non-empty secret replaced with Redacted
// in the text of err, a classified error keeping its identity.
func Scrub(err error, secrets ...string) error {
	return executors.Scrub(err, secrets...)
}
