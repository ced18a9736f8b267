package api

import (
	"context"

	adm "github.com/outboxd/outboxd/internal/domain/admin"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/feed"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/settings"
	"github.com/outboxd/outboxd/outbox"
)

// The services the API serves, each behind the narrow interface its
// handlers use; internal/app wires the real ones, tests may fake them.

// Feeds reads the organizations' event feeds (internal/domain/feed).
type Feeds interface {
	Subscribe(ctx context.Context, org string) (<-chan struct{}, func())
	Feed(ctx context.Context, p *feed.Params) ([]invocation.FeedItem, bool, error)
	Cursor(ctx context.Context, org string, afterID int64) (invocation.Cursor, error)
	Resume(ctx context.Context, pos invocation.Cursor) (invocation.Cursor, error)
	Now(ctx context.Context) (invocation.Cursor, error)
}

// Settings reads and replaces an organization's settings
// (internal/domain/settings).
type Settings interface {
	GetModes(ctx context.Context, org, automationID string) (outbox.Modes, error)
	PutModes(ctx context.Context, org, automationID, userID string, raw map[string]string) (outbox.Modes, error)
	GetQuietHours(ctx context.Context, org string) ([]settings.QuietHoursWindow, error)
	PutQuietHours(ctx context.Context, org, by string, windows []settings.QuietHoursWindow) ([]settings.QuietHoursWindow, error)
	GetDoNotContact(ctx context.Context, org string) ([]string, error)
	PutDoNotContact(ctx context.Context, org, by string, patterns []string) ([]string, error)
	PutCredential(ctx context.Context, p *settings.PutCredentialParams) (credential.Info, error)
	ListCredentials(ctx context.Context, org string) ([]credential.Info, error)
}

// Admin is an organization's administration of its own work
// (internal/domain/admin): dead letters, its queue and pause, stats and
// rate buckets. River's queues are the operator's and not served.
type Admin interface {
	ListDeadLetters(ctx context.Context, org string, page outbox.Page) ([]invocation.Invocation, int64, error)
	RetryDeadLetters(ctx context.Context, org, by string, ids []string) ([]adm.BatchResult, error)
	DiscardDeadLetters(ctx context.Context, org, by string, ids []string) ([]adm.BatchResult, error)
	Queue(ctx context.Context, org string) (*adm.OrgQueue, error)
	Pause(ctx context.Context, org, by string) (*adm.OrgQueue, error)
	Resume(ctx context.Context, org, by string) (*adm.OrgQueue, error)
	Stats(ctx context.Context, org string) (*adm.Stats, error)
	RateBuckets(ctx context.Context, org string) ([]adm.RateBucket, error)
}
