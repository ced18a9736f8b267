package api

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	adm "github.com/outboxd/outboxd/internal/domain/admin"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/feed"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/preview"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/domain/settings"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/policy"
)

// The services the API serves, each behind the narrow interface its
// handlers use; internal/app wires the real ones, tests may fake them.

// Outbox is the outbox itself (package outbox): invoke, enqueue, batch,
// approve, deny, cancel, the reads of invocations, and the catalog an
// agent invokes from.
type Outbox interface {
	Invoke(ctx context.Context, p *outbox.InvokeParams) (invocation.Invocation, error)
	Enqueue(ctx context.Context, p *outbox.EnqueueParams) (inv invocation.Invocation, created bool, err error)
	EnqueueBatch(ctx context.Context, by *outbox.Enqueuer, envs []outbox.Envelope) ([]outbox.BatchItem, error)
	Approve(ctx context.Context, p *outbox.ApproveParams) (invocation.Invocation, error)
	Deny(ctx context.Context, p *outbox.DenyParams) (invocation.Invocation, error)
	Cancel(ctx context.Context, org, id, by string) (invocation.Invocation, error)
	// The reads take the token's sources claim: an invocation of another
	// source is not found, and the listings leave it out.
	Get(ctx context.Context, org, id string, sources auth.SourceClaim) (invocation.Invocation, error)
	GetInSession(ctx context.Context, org, sessionID, id string, sources auth.SourceClaim) (invocation.Invocation, error)
	GetEnvelope(ctx context.Context, org string, id string, sources auth.SourceClaim) (invocation.Invocation, error)
	Events(ctx context.Context, org, id string, sources auth.SourceClaim) ([]invocation.Event, error)
	ListSession(ctx context.Context, org, sessionID string, sources auth.SourceClaim, page invocation.Page) ([]invocation.Invocation, error)
	ListOrg(ctx context.Context, org string, f invocation.ListFilter, page invocation.Page) ([]invocation.Invocation, int64, error)
}

// Catalog says what a caller may use: the available actions with their
// modes, and an integration's guide (internal/domain/catalog's Reader);
// for admins, also the actions of the providers with no credential stored
// (All) and the providers a credential may be stored for.
type Catalog interface {
	Available(ctx context.Context, c *catalog.Caller) (*catalog.Listing, error)
	All(ctx context.Context, c *catalog.Caller) (*catalog.Listing, error)
	Guide(ctx context.Context, c *catalog.Caller, integration string) (string, error)
	CredentialProviders() []catalog.CredentialProvider
}

// MCP serves the MCP front door (internal/mcpfront) to a verified caller,
// whose client reached outboxd at origin (its results link to the
// console there).
type MCP interface {
	ServeMCP(w http.ResponseWriter, r *http.Request, c *auth.Claims, origin string)
	// Close ends the front door's sessions, whose streams would hold a
	// graceful shutdown up.
	Close()
}

// Webhooks manages an organization's webhook endpoints
// (internal/domain/relay/webhook).
type Webhooks interface {
	Create(ctx context.Context, org string, p *webhook.Params) (webhook.Endpoint, string, error)
	Get(ctx context.Context, org, id string) (webhook.Endpoint, error)
	List(ctx context.Context, org string) ([]webhook.Endpoint, error)
	Update(ctx context.Context, org, id string, p *webhook.Params) (webhook.Endpoint, error)
	Delete(ctx context.Context, org, id string) error
	RotateSecret(ctx context.Context, org, id string, overlap time.Duration) (webhook.Endpoint, string, error)
	// Deliveries lists only those of the sources the claim allows.
	Deliveries(ctx context.Context, org, id string, sources auth.SourceClaim, limit, offset int) ([]webhook.Delivery, error)
}

// Slack holds an organization's Slack approval settings and, as a
// handler, takes Slack's clicks (internal/domain/relay/slackapproval).
type Slack interface {
	Get(ctx context.Context, org string) (slackapproval.Settings, error)
	PutChannel(ctx context.Context, org, by string, channel *string, ifMatch string) (slackapproval.Settings, error)
	PutApprovers(ctx context.Context, org, by string, approvers map[string]slackapproval.Approver, ifMatch string) (slackapproval.Settings, error)
}

// Revocations revokes an organization's tokens and watches a verified
// token for its revocation (internal/domain/revocation).
type Revocations interface {
	Revoke(ctx context.Context, org string, p *revocation.Params) (revocation.Revocation, error)
	List(ctx context.Context, org string) ([]revocation.Revocation, error)
	// Watch returns a context that ends once c is revoked.
	Watch(ctx context.Context, c *auth.Claims) (context.Context, context.CancelFunc)
	// Revoked says whether c is revoked (a console session's claims; a
	// bearer token's are checked by the verifier).
	Revoked(c *auth.Claims) bool
}

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
	GetModes(ctx context.Context, org, automationID string) (policy.Modes, error)
	// PutModesOf replaces the overrides of the sources the claim allows
	// and keeps the others, in one transaction.
	PutModesOf(ctx context.Context, org, automationID, userID string, sources auth.SourceClaim, raw map[string]string, ifMatch string) (policy.Modes, error)
	GetQuietHours(ctx context.Context, org string) ([]settings.QuietHoursWindow, error)
	PutQuietHours(ctx context.Context, org, by string, windows []settings.QuietHoursWindow, ifMatch string) ([]settings.QuietHoursWindow, error)
	GetDoNotContact(ctx context.Context, org string) ([]string, error)
	PutDoNotContact(ctx context.Context, org, by string, patterns []string, ifMatch string) ([]string, error)
	// PutCredential and DeleteCredential also revoke the source's grants,
	// in the same transaction, and return their ids.
	PutCredential(ctx context.Context, p *settings.PutCredentialParams) (credential.Info, []uuid.UUID, error)
	ListCredentials(ctx context.Context, org string) ([]credential.Info, error)
	DeleteCredential(ctx context.Context, org, integration, userID string) ([]uuid.UUID, error)
}

// Previews reads invocations' previews (internal/domain/preview): ok is
// false while none is recorded.
type Previews interface {
	Get(ctx context.Context, org string, invocationID uuid.UUID) (rec preview.Record, ok bool, err error)
}

// Audit is the organization's audit trail (internal/domain/audit): the
// HTTP layer records the changes whose services do not record them in
// their own transaction, and serves the trail to admins.
type Audit interface {
	Record(ctx context.Context, c *audit.Change) error
	List(ctx context.Context, org string, f *audit.Filter) ([]audit.Entry, int64, error)
	Export(ctx context.Context, org string, anchor func(*audit.Anchor) error, entry func(*audit.Entry) error) error
}

// Admin is an organization's administration of its own work
// (internal/domain/admin): dead letters, its queue and pause, stats and
// rate buckets. River's queues are the operator's and not served.
type Admin interface {
	// The dead letters take the token's sources claim: one of another
	// source is not listed, and is not_found as an unknown id is.
	ListDeadLetters(ctx context.Context, org string, sources auth.SourceClaim, page invocation.Page) ([]invocation.Invocation, int64, error)
	RetryDeadLetters(ctx context.Context, org, by string, ids []string, sources auth.SourceClaim) ([]adm.BatchResult, error)
	DiscardDeadLetters(ctx context.Context, org, by string, ids []string, sources auth.SourceClaim) ([]adm.BatchResult, error)
	Queue(ctx context.Context, org string) (*adm.OrgQueue, error)
	Pause(ctx context.Context, org, by string) (*adm.OrgQueue, error)
	Resume(ctx context.Context, org, by string) (*adm.OrgQueue, error)
	Stats(ctx context.Context, org string) (*adm.Stats, error)
	RateBuckets(ctx context.Context, org string) ([]adm.RateBucket, error)
}
