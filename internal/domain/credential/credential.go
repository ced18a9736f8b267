// Package credential resolves provider tokens for workers at call time (the
// getToken boundary): from outboxd's own encrypted store (credentialstore),
// or from an HTTP token broker (Broker). It holds what both share: the
// request, the token and its errors. No route or log ever sees a token.
package credential

import (
	"errors"
	"time"
)

var (
	// ErrUnreadable is returned when a stored credential cannot be opened
	// with the configured secrets.key (the key changed, or the row was
	// tampered with). Store the credential again to fix it.
	ErrUnreadable = errors.New("stored credential cannot be decrypted with secrets.key")
	// ErrKeyChanged is returned by CheckKey when the newest stored
	// credential does not open with secrets.key: the data outlived the key
	// it was sealed with.
	ErrKeyChanged = errors.New("stored credentials were sealed with another secrets.key")
	// ErrInactive is returned when the integration's connection is not
	// active (revoked, expired, suspended): retrying will not help.
	ErrInactive = errors.New("integration is not active")
	// ErrRefused is returned when the token broker refuses outboxd's
	// request or answers without a token: a configuration problem that a
	// retry will not fix.
	ErrRefused = errors.New("token broker refused the request")
)

// Request names the credential one call needs.
type Request struct {
	Org         string
	Integration string
	// UserID is the user the call acts for; a credential of that user is
	// preferred over the organization's. Empty for org-only.
	UserID string
	// Version, when set, is the last change of the stored credentials the
	// call may use (read with the invocation). The store then answers from
	// its cache of decrypted tokens while the version is unchanged, so a
	// credential changed since is read afresh by the next job.
	Version time.Time
	// Local says the credential is one only outboxd holds (an
	// org-registered source's secret, such as a connector's or a
	// database's URL), never a broker: a token source that asks a broker
	// reads it from the store.
	Local bool
}

// Token is a resolved credential.
type Token struct {
	Value string
	// Kind is executors.TokenKindAPIKey, executors.TokenKindOAuth or "".
	Kind string
	// ExpiresAt is when the token stops working; zero when unknown.
	ExpiresAt time.Time
}

// Info is what may be shown about a stored credential: never the token.
type Info struct {
	Integration string
	UserID      string
	TokenKind   string
	UpdatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Note is what a worker learned about the credential since it was
	// stored, such as "reconcile_unavailable: missing channels:history
	// scope"; storing it again clears it.
	Note string
}
