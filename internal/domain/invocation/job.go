package invocation

import (
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// QueueActions is the queue execute jobs run on.
const QueueActions = "actions"

// ExecuteArgs runs one invocation. The job row is the outbox row: the store
// inserts it in the transaction that records the invocation (or replays
// it), and nowhere else.
type ExecuteArgs struct {
	InvocationID uuid.UUID `json:"invocation_id"`
	// Retry overrides the worker's backoff for this job (its source's or its
	// envelope's policy). Max attempts travel as the job's max_attempts.
	Retry *Retry `json:"retry,omitempty"`
	// Bucket is the rate bucket the call takes a token from, so the worker
	// takes it before its first statement. Nil in jobs enqueued by a
	// version that did not record it: the worker then reads the invocation
	// first.
	Bucket *BucketRef `json:"bucket,omitempty"`
}

// BucketRef names an invocation's rate bucket and what its scope key is
// made of. An empty Name means the invocation takes no token.
type BucketRef struct {
	Name   string `json:"name,omitempty"`
	Org    string `json:"org,omitempty"`
	Source string `json:"source,omitempty"`
}

// Kind implements river.JobArgs.
func (ExecuteArgs) Kind() string { return "execute_action" }

// InsertOpts puts execute jobs on the actions queue.
func (ExecuteArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueActions} }

// ExpireArgs expires one pending invocation at its expires_at. It is
// inserted, scheduled, in the transaction that parks the invocation.
type ExpireArgs struct {
	InvocationID uuid.UUID `json:"invocation_id"`
	// OrganizationID is the invocation's organization: row-level security
	// shows a job to its organization's API sessions only (migration 021).
	OrganizationID string `json:"organization_id,omitempty"`
}

// Kind implements river.JobArgs.
func (ExpireArgs) Kind() string { return "expire_invocation" }

// Retry is a retry policy: how many attempts and the backoff bounds. Zero
// fields fall back to the worker's configuration.
type Retry struct {
	MaxAttempts int           `json:"max_attempts,omitempty"`
	BaseDelay   time.Duration `json:"base_delay,omitempty"`
	MaxDelay    time.Duration `json:"max_delay,omitempty"`
}

// Merge returns r with the fields of over that are set.
func (r Retry) Merge(over Retry) Retry {
	if over.MaxAttempts > 0 {
		r.MaxAttempts = over.MaxAttempts
	}
	if over.BaseDelay > 0 {
		r.BaseDelay = over.BaseDelay
	}
	if over.MaxDelay > 0 {
		r.MaxDelay = over.MaxDelay
	}
	return r
}
