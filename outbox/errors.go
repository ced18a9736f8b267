package outbox

import (
	"errors"
	"fmt"
	"time"

	"github.com/outboxd/outboxd/executors"
)

// Domain errors; the HTTP layer maps them to status codes in one place.
var (
	// ErrNotFound: no such invocation, action or integration in this org.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the invocation is not in a state that allows the change.
	ErrConflict = errors.New("conflict")
	// ErrExpired: the invocation's approval window has passed.
	ErrExpired = errors.New("expired")
	// ErrPendingLimit: the session already has the maximum of pending
	// invocations.
	ErrPendingLimit = errors.New("pending limit reached")
	// ErrIdempotencyMismatch: an idempotency key or external id was reused
	// with a different request.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with different parameters")
	// ErrSourceUnavailable: the source could not list its actions right now
	// (an unreachable connector).
	ErrSourceUnavailable = errors.New("source unavailable")
	// ErrSourceNotAllowed: the token's sources claim excludes the source.
	ErrSourceNotAllowed = errors.New("source not allowed for this token")
	// ErrSourceDisabled: the source's actions are listed but cannot be
	// invoked now (plugins while plugin code execution is off).
	ErrSourceDisabled = errors.New("source disabled")
	// ErrAutomationNotAllowed: a request names an automation its token
	// does not carry.
	ErrAutomationNotAllowed = errors.New("automation not allowed for this token")
)

// ValidationError lists every field of a request that failed validation.
type ValidationError struct {
	Message string
	Fields  []executors.FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	return fmt.Sprintf("%s: %d invalid field(s)", e.Message, len(e.Fields))
}

// Invalid is a ValidationError of one field.
func Invalid(field, format string, args ...any) *ValidationError {
	msg := fmt.Sprintf(format, args...)
	return &ValidationError{Message: msg, Fields: []executors.FieldError{{Field: field, Message: msg}}}
}

var invalid = Invalid

// RateLimitError is returned when a session invokes faster than allowed.
type RateLimitError struct {
	Limit      int
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("invoke rate limit of %d per minute reached", e.Limit)
}
