// Package executors holds the ActionSource seam: the interface every provider
// (Slack, Linear, Sentry, GitHub, MCP connectors) implements, the action
// definitions it publishes, the registration a provider package exports
// (Provider), and the error shape the worker uses to decide between retry,
// snooze and failure.
package executors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/outboxd/outboxd/policy"
)

// Tier is an action definition's risk tier, R0 to R4 (policy.Tier, which
// documents the tiers and their mapping onto read, write and danger). It
// decides the mode an action infers when no override applies, and R3 and
// R4 never run without a human whatever the overrides say.
type Tier = policy.Tier

// The tiers a definition may carry.
const (
	TierR0 = policy.TierR0 // nothing outside outboxd
	TierR1 = policy.TierR1 // reads from a provider
	TierR2 = policy.TierR2 // a write
	TierR3 = policy.TierR3 // a destructive or irreversible write
	TierR4 = policy.TierR4 // critical
)

// Definition describes one action a source can execute.
type Definition struct {
	// ID is the action id within its source, e.g. "send_message".
	ID string `json:"action"`
	// Description is shown to agents in the catalog and guides.
	Description string `json:"description"`
	// Tier is the action's risk tier. A definition without one is treated
	// as R4: it never runs without a human.
	Tier Tier `json:"risk_tier"`
	// Params is the JSON Schema of the action's params.
	Params json.RawMessage `json:"params"`
	// Output, when set, is the JSON Schema of the structured result the
	// action returns (an MCP connector's tool with an outputSchema).
	Output json.RawMessage `json:"output,omitempty"`
	// Recipients names the top-level params that say who is contacted
	// (a Slack channel): do-not-contact patterns are matched against them.
	Recipients []string `json:"recipient_fields,omitempty"`
	// Delivery says what a retry after a lost answer can do at the
	// provider: DeliveryExactlyOnce, DeliveryReconciled or
	// DeliveryAtLeastOnce. Empty is treated as DeliveryAtLeastOnce.
	Delivery Delivery `json:"delivery,omitempty"`
}

// Delivery is an action's delivery guarantee: what becomes of an
// invocation whose call may have reached the provider without its answer
// reaching outboxd (a timeout, a 5xx, a reset, a worker killed mid-call),
// which outboxd then runs again.
type Delivery string

// The delivery guarantees an action may declare.
const (
	// DeliveryExactlyOnce: running again cannot act twice. The provider
	// takes the invocation's idempotency key (or an id derived from it),
	// or the action only reads or sets a state.
	DeliveryExactlyOnce Delivery = "exactly_once"
	// DeliveryReconciled: the provider takes no idempotency key, so before
	// running again the source looks for what an earlier attempt created
	// (by a mark carrying the key) and completes with it when found.
	DeliveryReconciled Delivery = "reconciled"
	// DeliveryAtLeastOnce: running again may act twice.
	DeliveryAtLeastOnce Delivery = "at_least_once"
)

// OrDefault returns d, or DeliveryAtLeastOnce when d is empty.
func (d Delivery) OrDefault() Delivery {
	if d == "" {
		return DeliveryAtLeastOnce
	}
	return d
}

// ExecContext carries what a source needs to execute an action. Sources never
// read Postgres: everything is injected here.
type ExecContext struct {
	// Token is the provider credential, resolved at call time. Never logged.
	Token string
	// TokenKind says how Token is presented when a provider distinguishes:
	// TokenKindAPIKey (as is) or TokenKindOAuth (as a Bearer token). Empty
	// means the provider's usual form.
	TokenKind string
	// OrganizationID and SessionID identify who asked.
	OrganizationID string
	SessionID      string
	// IdempotencyKey is stable across retries of one invocation (the
	// invocation id). Sources pass it to the provider where its API supports
	// one.
	IdempotencyKey string
	// Retry is true when an earlier execution of this invocation started
	// (a retry, a rerun after a snooze or a rescue, a replayed dead
	// letter), so the provider may already have acted on it even though no
	// answer was recorded. A source whose provider takes no idempotency
	// key looks for its earlier work before creating anything again.
	Retry bool
	// FirstStartedAt is when the invocation's first execution started (the
	// zero time when unknown): nothing an earlier attempt did is older, so
	// a look-up for it starts there, less a margin for clock skew.
	FirstStartedAt time.Time
	// Unreconciled, when set, is told when the source could not look for
	// an earlier attempt's work and acts again without that check (a
	// credential without the scope to read what it created). The worker
	// counts it and shows it on the credential's status.
	Unreconciled func(Unreconciled)
	// Resume carries a source's progress through a look-up it broke off
	// (a provider's rate limit on a later page) to the next run of the
	// same attempt, which goes on where it stopped rather than starting
	// over and meeting the same limit again.
	Resume Resume
}

// Resume is what a source saved of its progress in the run before, and
// how it saves its own for the next. The worker keeps it in the job, for
// the next run of the same attempt only: a run after a wait the provider
// asked for (a snooze), in which nothing was done since it was saved.
type Resume struct {
	// Saved is what the run before saved; nil when it saved nothing, or
	// belongs to an earlier attempt, or when the run before called the
	// source again without saving (it may have acted since). The source
	// checks that it is its own and matches its call before using it.
	Saved json.RawMessage
	// Save, when set, records progress for the next run, replacing what
	// an earlier Save of this run gave. A source saves only progress that
	// stays true if the run ends now: a look-up broken off before it
	// acted.
	Save func(json.RawMessage)
}

// Unreconciled is why a source could not look for an earlier attempt's
// work before acting again.
type Unreconciled struct {
	// Reason is a short code, such as the provider's error code
	// ("missing_scope"): a metric label.
	Reason string
	// CredentialNote, when set, says what the credential lacks, in words
	// for its status ("reconcile_unavailable: missing channels:history
	// scope"); empty when the cause is not the credential (a channel the
	// app cannot read).
	CredentialNote string
}

// Token kinds for ExecContext.TokenKind.
const (
	TokenKindAPIKey = "api_key"
	TokenKindOAuth  = "oauth"
)

// CodeUnauthorized is the Error code a source returns when the provider
// rejected the credential (HTTP 401). The worker then refreshes the token
// once and retries; a second rejection fails the invocation.
const CodeUnauthorized = "unauthorized"

// Result is the outcome of a successful execution.
type Result struct {
	// Data is the provider's answer, stored redacted and truncated.
	Data json.RawMessage
	// ProviderRef is the provider's id for what was created or changed
	// (a Slack message ts, a Linear issue id).
	ProviderRef string
	// Conflict is true when the provider reported the work as already done
	// (a retry after a lost answer). Conflicts count as success.
	Conflict bool
	// Steps records the source's own verification (and repair and
	// rollback) of the call, for sources that have such steps (plugins);
	// nil for the others.
	Steps *Steps
}

// Steps is what a source did after its call to make sure of its effect,
// in the Action API contract's terms: the verification and its checks,
// and whether a repair or a rollback was attempted and succeeded.
type Steps struct {
	Verification Verification `json:"verification"`
	Repair       Step         `json:"repair"`
	Rollback     Step         `json:"rollback"`
}

// Verification is what verified an action's effect.
type Verification struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Check is one verification check and its outcome.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Step is a repair or a rollback: whether it was attempted and whether it
// succeeded.
type Step struct {
	Attempted bool `json:"attempted"`
	OK        bool `json:"ok"`
}

// Source is the ActionSource seam. Implementations are stateless.
type Source interface {
	// ID is the source id used in the invocation's integration column and in
	// mode keys: "slack", "linear", "connector:<uuid>".
	ID() string
	// ListActions returns the definitions the source offers.
	ListActions(ctx context.Context, ec ExecContext) ([]Definition, error)
	// Execute runs one action. Errors should be *Error so the worker can
	// classify them; any other error is treated as retryable.
	Execute(ctx context.Context, actionID string, params json.RawMessage, ec ExecContext) (Result, error)
}

// Endpointed is a source whose server its organization chose (an MCP
// connector's URL): the intent of its calls names the endpoint, so a call
// approved for one server is not made to another.
type Endpointed interface {
	// Endpoint is where the source's calls go.
	Endpoint() string
}

// Error is an execution failure classified by the source.
type Error struct {
	// Code is a short machine-readable reason, e.g. Slack's "channel_not_found".
	Code string
	// Message is a human-readable explanation. It must not contain secrets.
	Message string
	// Retryable says whether the same call may succeed later.
	Retryable bool
	// RetryAfter, when positive, is how long the provider asked us to wait.
	RetryAfter time.Duration
	// OtherLimit says RetryAfter is the limit of another of the provider's
	// methods than the action's own (a look-up, limited apart from the
	// write): the call waits, but its rate bucket is not drained, so the
	// source's other calls go on.
	OtherLimit bool
	// NotDone says the provider refused the call in a way that, by its
	// API, means it did nothing (a rate limit that refused the request),
	// after any look-up for an earlier execution's work (ExecContext.Retry)
	// had found none: no execution so far may have acted, so the next one
	// is not a Retry and need not look again. A source sets it only when
	// both hold.
	NotDone bool
	// Cause is the underlying error, such as the caller's context error or
	// ErrUnknownAction, reachable with errors.Is. It is not part of the
	// error's text, which stays the classification's and so free of
	// secrets; a cause whose text may hold one is not kept.
	Cause error
	// Steps records the verification and rollback that ran before the
	// failure was decided (a plugin whose verification failed); nil when
	// none ran.
	Steps *Steps
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause, so errors.Is sees through the classification.
func (e *Error) Unwrap() error { return e.Cause }

// Classify returns err as an *Error. Errors that are not *Error (network
// failures, deadlines) are considered retryable.
func Classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: "transient_error", Message: err.Error(), Retryable: true}
}

// ErrUnknownAction is returned by Execute for an action the source does not
// define.
var ErrUnknownAction = errors.New("unknown action")
