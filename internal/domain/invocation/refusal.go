package invocation

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/auth"
)

// Refusal is a revocation in effect that refuses the token asking for an
// invocation, as the transaction recording the invocation finds it
// (package revocation): the invocation is recorded and then withdrawn
// there, as the revocation withdraws those recorded before it.
type Refusal struct {
	// RevocationID is the revocation's id.
	RevocationID int64
	// RevokedBy is who revoked: the withdrawal's actor.
	RevokedBy string
	// Reason is the reason on the withdrawn invocation's cancelled event,
	// naming the revocation and what it revoked.
	Reason string
}

// RevokedError is the error of a request whose invocation was withdrawn as
// it was recorded, because a revocation refuses the token that asked: the
// token was revoked after the request's own check let it in (in another
// API process, within auth.revocation_refresh, or while the request was
// past its check). The invocation is recorded cancelled and never runs.
// errors.Is(err, auth.ErrTokenRevoked) holds: the request is answered as a
// revoked token is.
type RevokedError struct {
	// Invocation is the withdrawn invocation's id.
	Invocation uuid.UUID
	Refusal    Refusal
}

func (e *RevokedError) Error() string {
	return fmt.Sprintf("%s: invocation %s was withdrawn as it was recorded (revocation %d)", auth.ErrTokenRevoked, e.Invocation, e.Refusal.RevocationID)
}

func (e *RevokedError) Unwrap() error { return auth.ErrTokenRevoked }
