// Package errs holds the few kinds of failure the domain reports to a
// caller: not found, conflict, invalid input, limits, and refusals. Every
// service returns these (wrapped with its own message where it says more),
// and the HTTP layer maps each kind to one status and error code in one
// place (internal/api's toAPIError). A new kind is added here and there,
// never as another ErrNotFound in a service package.
package errs

import (
	"errors"
	"fmt"
	"time"

	"github.com/outboxd/outboxd/executors"
)

// Kind is one kind of failure. Its Code is the API's error code; as an
// error it reads as its default message, so a service may return the kind
// itself or wrap it with Errorf.
type Kind struct {
	Code    string
	message string
}

func (k *Kind) Error() string { return k.message }

// The kinds. Compare with errors.Is(err, errs.NotFound).
var (
	// NotFound: no such invocation, source, credential, webhook… in this
	// organization (another organization's ids are not found either).
	NotFound = &Kind{"not_found", "not found"}
	// Conflict: the thing is not in a state that allows the change, or a
	// name is taken.
	Conflict = &Kind{"conflict", "conflict"}
	// Expired: the invocation's approval window has passed.
	Expired = &Kind{"expired", "expired"}
	// PendingLimit: the session already has the maximum of pending
	// invocations.
	PendingLimit = &Kind{"pending_limit", "pending limit reached"}
	// IdempotencyMismatch: an idempotency key or external id was reused
	// with a different request.
	IdempotencyMismatch = &Kind{"idempotency_mismatch", "idempotency key reused with different parameters"}
	// SourceUnavailable: the source could not list its actions right now
	// (an unreachable connector).
	SourceUnavailable = &Kind{"source_unavailable", "source unavailable"}
	// SourceNotAllowed: the token's sources claim excludes the source.
	SourceNotAllowed = &Kind{"source_not_allowed", "source not allowed for this token"}
	// SourceDisabled: the source's actions are listed but cannot be
	// invoked now (plugins while plugin code execution is off).
	SourceDisabled = &Kind{"source_disabled", "source disabled"}
	// AutomationNotAllowed: a request names an automation its token does
	// not carry.
	AutomationNotAllowed = &Kind{"automation_not_allowed", "automation not allowed for this token"}
	// SelfApproval: the approver asked for the invocation themselves.
	SelfApproval = &Kind{"self_approval", "nobody approves their own request"}
	// PreconditionFailed: a replacement named the version it replaces
	// (If-Match) and the stored one has changed since.
	PreconditionFailed = &Kind{"precondition_failed", "the settings changed since they were read"}
	// NotApprover: the invocation's approver group does not include the
	// person deciding.
	NotApprover = &Kind{"not_an_approver", "not in the approver group of this invocation"}
	// AlreadyApproved: the person approved this invocation already; it
	// waits for someone else.
	AlreadyApproved = &Kind{"already_approved", "already approved by this person"}
)

// All is every kind, for the HTTP layer's test that maps each one.
var All = []*Kind{NotFound, Conflict, Expired, PendingLimit, IdempotencyMismatch,
	SourceUnavailable, SourceNotAllowed, SourceDisabled, AutomationNotAllowed, SelfApproval, PreconditionFailed,
	NotApprover, AlreadyApproved}

// Errorf is an error of kind whose message is the formatted text (which
// may wrap another error with %w); errors.Is finds both.
func Errorf(kind *Kind, format string, args ...any) error {
	return &kindError{kind: kind, err: fmt.Errorf(format, args...)}
}

type kindError struct {
	kind *Kind
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// KindOf is the kind of err, or nil when it has none.
func KindOf(err error) *Kind {
	var k *Kind
	if errors.As(err, &k) {
		return k
	}
	return nil
}

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

// RateLimitError is returned when a caller acts faster than allowed.
type RateLimitError struct {
	Limit      int
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("invoke rate limit of %d per minute reached", e.Limit)
}
