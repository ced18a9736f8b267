package httpsource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/outboxd/outboxd/executors"
)

// Redacted replaces a secret in error texts and stored answers.
const Redacted = "[REDACTED]"

// UnknownAction is the error a source's Execute returns for an action it
// does not define: code unknown_action, not retryable, and
// executors.ErrUnknownAction as its cause.
func UnknownAction(source, actionID string) error {
	return &executors.Error{
		Code:    "unknown_action",
		Message: fmt.Sprintf("the %s source has no action %q", source, actionID),
		Cause:   executors.ErrUnknownAction,
	}
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

// Scrub replaces each non-empty secret, in order, with Redacted in the text
// of err. Messages are built without the token, but some embed text from
// elsewhere (network errors, the provider's own fields), and a token in an
// invocation's stored error would outlive any rotation.
//
// A classified error keeps its identity: the Code and Message of the
// *executors.Error in its chain are scrubbed in place. Any other error whose
// text holds a secret is replaced by a plain error with the scrubbed text.
func Scrub(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	secrets = nonEmpty(secrets)
	if len(secrets) == 0 {
		return err
	}
	scrub := func(s string) string {
		for _, secret := range secrets {
			s = strings.ReplaceAll(s, secret, Redacted)
		}
		return s
	}
	var e *executors.Error
	if errors.As(err, &e) {
		e.Code = scrub(e.Code)
		e.Message = scrub(e.Message)
		return err
	}
	if msg := err.Error(); scrub(msg) != msg {
		return errors.New(scrub(msg))
	}
	return err
}

// nonEmpty drops empty strings, which strings.ReplaceAll would otherwise
// match between every rune.
func nonEmpty(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
