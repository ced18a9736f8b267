package worker_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/executors/slack/slacktest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
	"github.com/outboxd/outboxd/policy"
	"github.com/outboxd/outboxd/worker"
)

// registrySources resolves static sources, as the catalog does for
// providers.
type registrySources struct{ *executors.Registry }

func (r registrySources) Source(_ context.Context, _, id string) (*catalog.Source, error) {
	if s, ok := r.Registry.Source(id); ok {
		return &catalog.Source{Source: s, NeedsCredential: true}, nil
	}
	return nil, executors.ErrUnknownAction
}

type unitBundle struct {
	tx      pgx.Tx
	store   *invocationstore.Store
	slack   *apptest.Slack
	box     *secretbox.Box
	creds   *credentialstore.Store
	metrics *telemetry.Metrics
	worker  *rivertest.Worker[invocation.ExecuteArgs, pgx.Tx]
	client  *river.Client[pgx.Tx]
}

// setupUnit runs an ExecuteWorker inside a transaction rolled back at the
// end of the test, against a loopback Slack.
func setupUnit(t *testing.T) *unitBundle { return setupUnitWith(t, nil, nil) }

// setupUnitWith is setupUnit with another source besides Slack (its
// credential the word "demo") and outboxd's own secrets.
func setupUnitWith(t *testing.T, other executors.Source, secrets []string) *unitBundle {
	t.Helper()
	fake := apptest.NewSlack(t, nil)
	b := setupUnitAt(t, fake.Server.URL, other, secrets)
	b.slack = fake
	return b
}

// setupUnitOn is setupUnit with Slack at slackURL.
func setupUnitOn(t *testing.T, slackURL string) *unitBundle {
	t.Helper()
	return setupUnitAt(t, slackURL, nil, nil)
}

// setupUnitAt is setupUnitWith with Slack at slackURL.
func setupUnitAt(t *testing.T, slackURL string, other executors.Source, secrets []string) *unitBundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })

	src, err := slack.New(&slack.Config{BaseURL: slackURL})
	require.NoError(t, err)
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	creds := credentialstore.New(tx, tx, box)
	_, err = creds.Put(ctx, credential.Request{Org: "org-1", Integration: "slack"}, credential.Token{Value: "xoxb-unit"}, "test")
	require.NoError(t, err)

	registry := executors.NewRegistry(src)
	if other != nil {
		registry.Add(other, "")
		_, err = creds.Put(ctx, credential.Request{Org: "org-1", Integration: other.ID()}, credential.Token{Value: "demo"}, "test")
		require.NoError(t, err)
	}

	config := &river.Config{}
	client, err := river.NewClient(riverpgxv5.New(pool), config)
	require.NoError(t, err)
	metrics := telemetry.NewNop()
	w := worker.NewExecuteWorker(&worker.Deps{
		Pool: pool, DB: tx, Sources: registrySources{registry}, Tokens: creds, Box: box, Metrics: metrics, Secrets: secrets,
	}, &worker.Config{RetryBaseDelay: time.Second, MaxProviderWaits: 2})
	return &unitBundle{
		tx: tx, store: invocationstore.New(client), box: box, creds: creds, metrics: metrics, client: client,
		worker: rivertest.NewWorker(t, riverpgxv5.New(pool), config, w),
	}
}

// approved records an approved invocation and returns it with its job.
func (b *unitBundle) approved(t *testing.T, edit func(p *invocation.CreateParams)) (invocation.Invocation, *rivertype.JobRow) {
	t.Helper()
	ctx := context.Background()
	p := &invocation.CreateParams{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", RequestedBy: "svc", Origin: "envelope",
		Integration: "slack", Action: "send_message", RiskLevel: "write", Mode: "allow", ModeSource: "org_default",
		Params: json.RawMessage(`{"channel":"C0123456789","text":"hi"}`), ParamsHash: "h",
		Status: invocation.StatusApproved, Approval: "auto",
	}
	if edit != nil {
		edit(p)
	}
	created, err := b.store.CreateMany(ctx, b.tx, []*invocation.CreateParams{p})
	require.NoError(t, err)
	inv := *created[0]
	job, err := b.client.JobGetTx(ctx, b.tx, *inv.JobID)
	require.NoError(t, err)
	return inv, job
}

// quietHours gives org-1 a quiet-hours window for every job, from before
// minutes ago to after minutes from now (wrapping midnight when it must).
func (b *unitBundle) quietHours(t *testing.T, before, after int) {
	t.Helper()
	now := time.Now().UTC()
	minute := now.Hour()*60 + now.Minute()
	_, err := b.tx.Exec(context.Background(), `INSERT INTO quiet_hours (organization_id, bucket, time_zone, start_minute, end_minute, updated_by)
		VALUES ('org-1', '', 'UTC', $1, $2, 'ops')`, (minute+1440-before)%1440, (minute+after)%1440)
	require.NoError(t, err)
}

// work runs job and returns River's result (a job that failed is in it:
// the worker's error is what River records) and the invocation after it.
func (b *unitBundle) work(t *testing.T, job *rivertype.JobRow) (*rivertest.WorkResult, invocation.Invocation) {
	t.Helper()
	res, _ := b.worker.WorkJob(context.Background(), t, b.tx, job)
	require.NotNil(t, res)
	var args invocation.ExecuteArgs
	require.NoError(t, json.Unmarshal(job.EncodedArgs, &args))
	inv, err := b.store.Get(context.Background(), b.tx, "org-1", args.InvocationID)
	require.NoError(t, err)
	return res, inv
}

func (b *unitBundle) timeline(t *testing.T, id uuid.UUID) []invocation.EventType {
	t.Helper()
	events, err := b.store.Events(context.Background(), b.tx, "org-1", id)
	require.NoError(t, err)
	var out []invocation.EventType
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}

func TestExecuteWorker_Completes(t *testing.T) {
	t.Parallel()
	b := setupUnit(t)
	inv, job := b.approved(t, nil)
	res, got := b.work(t, job)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, invocation.StatusCompleted, got.Status)
	require.Equal(t, []invocation.EventType{"created", "started", "completed"}, b.timeline(t, inv.ID))
	require.Len(t, b.slack.Requests(), 1)
	require.Equal(t, inv.ID.String(), b.slack.Requests()[0].IdempotencyKey)
}

func TestExecuteWorker_Gates(t *testing.T) {
	t.Parallel()

	t.Run("MustRunBeforePassedSkips", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		past := time.Now().Add(-time.Minute)
		inv, job := b.approved(t, func(p *invocation.CreateParams) { p.MustRunBefore = &past })
		res, got := b.work(t, job)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Equal(t, invocation.StatusSkipped, got.Status)
		require.Contains(t, *got.Error, "must_run_before")
		require.Equal(t, []invocation.EventType{"created", "skipped"}, b.timeline(t, inv.ID))
		require.Empty(t, b.slack.Requests())
	})
	t.Run("DoNotContactSkips", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		_, err := b.tx.Exec(context.Background(), `INSERT INTO do_not_contact (organization_id, pattern, created_by) VALUES ('org-1', 'C01*', 'ops')`)
		require.NoError(t, err)
		_, job := b.approved(t, nil)
		_, got := b.work(t, job)
		require.Equal(t, invocation.StatusSkipped, got.Status)
		require.Contains(t, *got.Error, "do-not-contact")
		require.Empty(t, b.slack.Requests())
	})
	t.Run("QuietHoursSnooze", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		b.quietHours(t, 60, 60)
		_, job := b.approved(t, nil)
		res, got := b.work(t, job)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
		require.Equal(t, invocation.StatusApproved, got.Status)
		require.Empty(t, b.slack.Requests())
	})
}

func TestExecuteWorker_Failures(t *testing.T) {
	t.Parallel()

	t.Run("RetryableThenDeadLetter", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		b.slack.SetHandler(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
		inv, job := b.approved(t, func(p *invocation.CreateParams) { p.Retry = &invocation.Retry{MaxAttempts: 2} })
		res, got := b.work(t, job)
		require.Equal(t, river.EventKindJobFailed, res.EventKind)
		require.Contains(t, []rivertype.JobState{rivertype.JobStateRetryable, rivertype.JobStateAvailable}, res.Job.State, "River will run it again")
		require.Equal(t, invocation.StatusApproved, got.Status)
		require.NotNil(t, got.Error)

		res, got = b.work(t, res.Job)
		require.Equal(t, rivertype.JobStateDiscarded, res.Job.State, "the last attempt is the dead letter")
		require.Equal(t, invocation.StatusFailed, got.Status)
		require.NotNil(t, got.DeadLetteredAt)
		require.Equal(t, []invocation.EventType{"created", "started", "retry_scheduled", "started", "failed"}, b.timeline(t, inv.ID))
		require.Len(t, b.slack.Requests(), 2)
	})
	t.Run("PermanentFailsAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		b.slack.SetHandler(apptest.SlackError("channel_not_found"))
		_, job := b.approved(t, nil)
		res, got := b.work(t, job)
		require.Equal(t, rivertype.JobStateCancelled, res.Job.State)
		require.Equal(t, invocation.StatusFailed, got.Status)
		require.Contains(t, *got.Error, "channel_not_found")
	})
	t.Run("RetryAfterSnoozes", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		b.slack.SetHandler(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		inv, job := b.approved(t, nil)
		res, got := b.work(t, job)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
		require.Equal(t, invocation.StatusApproved, got.Status)
		require.EqualValues(t, 1, got.ProviderWaits)
		require.Equal(t, []invocation.EventType{"created", "started", "snoozed"}, b.timeline(t, inv.ID))
	})
	t.Run("CancelledBeforeItRuns", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		inv, job := b.approved(t, nil)
		_, err := b.store.Cancel(context.Background(), b.tx, inv.ID, "svc")
		require.NoError(t, err)
		// A job that still runs (say it was fetched before the cancel) finds
		// the invocation cancelled and calls nothing.
		res, err := b.worker.Work(context.Background(), t, b.tx, invocation.ExecuteArgs{InvocationID: inv.ID}, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		got, err := b.store.Get(context.Background(), b.tx, "org-1", inv.ID)
		require.NoError(t, err)
		require.Equal(t, invocation.StatusCancelled, got.Status)
		_ = job
		require.Empty(t, b.slack.Requests())
	})
}

// echoSource answers with everything it was given, as text and encoded,
// plus a secret of outboxd's it got hold of (as a plugin that read the
// config file could): its "fail" action fails with the same text.
type echoSource struct{ leak string }

func (echoSource) ID() string { return "echo" }

func (echoSource) ListActions(context.Context, executors.ExecContext) ([]executors.Definition, error) {
	return nil, nil
}

func (e echoSource) Execute(_ context.Context, action string, params json.RawMessage, ec executors.ExecContext) (executors.Result, error) {
	text := "called with " + string(params) + " using " + ec.Token + "; this is a demo of outboxd; config: " + e.leak
	steps := &executors.Steps{Verification: executors.Verification{OK: true, Checks: []executors.Check{
		{Name: "echo " + e.leak, OK: true, Detail: text},
	}}}
	if action == "fail" {
		return executors.Result{}, &executors.Error{Code: "bad_request", Message: text, Steps: steps}
	}
	data, err := json.Marshal(map[string]any{
		"text":   text,
		"base64": base64.StdEncoding.EncodeToString(params),
		"query":  "https://x/?q=" + url.QueryEscape(string(params)),
	})
	return executors.Result{Data: data, Steps: steps}, err
}

// TestExecuteWorker_ScrubsEchoedSecrets: the exact values of secret-named
// params (sealed at submit) and outboxd's own secrets, echoed back by a
// source as text, encoded, in its checks or in its error, are stored
// nowhere; an ordinary word that happens to be the credential survives.
func TestExecuteWorker_ScrubsEchoedSecrets(t *testing.T) {
	t.Parallel()
	const (
		paramSecret = "pw-planted-5521x"
		ownSecret   = "jwt-secret-of-outboxd-0123456789"
	)
	b := setupUnitWith(t, echoSource{leak: ownSecret}, []string{ownSecret})
	exact := json.RawMessage(`{"user":"ada","password":"` + paramSecret + `"}`)
	sealed := func(action string) func(p *invocation.CreateParams) {
		return func(p *invocation.CreateParams) {
			p.Integration, p.Action = "echo", action
			p.Params = policy.Redact(exact)
			p.ParamsSealed = b.box.Seal(exact, p.ID[:])
		}
	}

	_, job := b.approved(t, sealed("read"))
	_, got := b.work(t, job)
	require.Equal(t, invocation.StatusCompleted, got.Status, deref(got.Error))
	result := string(got.Result)
	steps, err := json.Marshal(got.Steps)
	require.NoError(t, err)
	require.Contains(t, result, `called with {\"user\":\"ada\",\"password\":\"[REDACTED]\"} using demo; this is a demo of outboxd; config: [REDACTED]`)
	require.Contains(t, string(steps), "echo [REDACTED]")
	for _, leaked := range []string{
		paramSecret, ownSecret,
		base64.StdEncoding.EncodeToString(exact),
		url.QueryEscape(paramSecret),
		base64.StdEncoding.EncodeToString([]byte(paramSecret))[:12],
	} {
		require.NotContains(t, result, leaked)
		require.NotContains(t, string(steps), leaked)
	}

	_, job = b.approved(t, sealed("fail"))
	_, got = b.work(t, job)
	require.Equal(t, invocation.StatusFailed, got.Status)
	require.Contains(t, *got.Error, "using demo; this is a demo of outboxd; config: [REDACTED]")
	steps, err = json.Marshal(got.Steps)
	require.NoError(t, err)
	for _, leaked := range []string{paramSecret, ownSecret} {
		require.NotContains(t, *got.Error, leaked)
		require.NotContains(t, string(steps), leaked)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestExecuteWorker_ReconcilesSlack(t *testing.T) {
	t.Parallel()

	// attempts runs an invocation whose first post's answer Slack drops
	// after storing the message, then its retry.
	attempts := func(t *testing.T, b *unitBundle, fake *slacktest.Server) invocation.Invocation {
		t.Helper()
		fake.AfterPost(func(slacktest.Message) slacktest.Fault { return slacktest.Drop })
		inv, job := b.approved(t, func(p *invocation.CreateParams) { p.Retry = &invocation.Retry{MaxAttempts: 3} })
		res, got := b.work(t, job)
		require.Equal(t, river.EventKindJobFailed, res.EventKind, "a lost answer is retried")
		require.Equal(t, invocation.StatusApproved, got.Status)
		require.Len(t, fake.Messages(), 1)
		fake.AfterPost(nil)

		res, got = b.work(t, res.Job)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Equal(t, invocation.StatusCompleted, got.Status)
		require.Equal(t, inv.ID, got.ID)
		return got
	}
	unavailable := func(b *unitBundle, reason string) float64 {
		var m dto.Metric
		require.NoError(t, b.metrics.Unreconciled.WithLabelValues("slack", reason).Write(&m))
		return m.GetCounter().GetValue()
	}

	t.Run("FindsTheFirstPost", func(t *testing.T) {
		t.Parallel()
		fake := slacktest.New(t)
		b := setupUnitOn(t, fake.URL())
		got := attempts(t, b, fake)

		messages := fake.Messages()
		require.Len(t, messages, 1, "exactly one message")
		require.Equal(t, messages[0].TS, *got.ProviderRef)
		require.True(t, got.Conflict, "completed with the message found")
		lookups := fake.Calls("conversations.history")
		require.Len(t, lookups, 1)
		oldest, err := strconv.ParseFloat(lookups[0].Query.Get("oldest"), 64)
		require.NoError(t, err)
		require.InDelta(t, float64(got.StartedAt.Add(-10*time.Minute).UnixMicro())/1e6, oldest, 0.001, "the window starts at the first attempt")
		require.Zero(t, unavailable(b, "missing_scope"))
	})

	t.Run("MissingScopePostsAgainAndNotesTheCredential", func(t *testing.T) {
		t.Parallel()
		fake := slacktest.New(t)
		fake.SetScopes("xoxb-unit", "chat:write")
		b := setupUnitOn(t, fake.URL())
		got := attempts(t, b, fake)

		require.Len(t, fake.Messages(), 2, "posted again, as before look-ups")
		require.False(t, got.Conflict)
		require.Equal(t, 1.0, unavailable(b, "missing_scope"))
		infos, err := b.creds.List(context.Background(), "org-1")
		require.NoError(t, err)
		require.Len(t, infos, 1)
		require.Equal(t, "reconcile_unavailable: missing channels:history scope", infos[0].Note)

		// Storing the credential again clears the note.
		_, err = b.creds.Put(context.Background(), credential.Request{Org: "org-1", Integration: "slack"}, credential.Token{Value: "xoxb-unit"}, "test")
		require.NoError(t, err)
		infos, err = b.creds.List(context.Background(), "org-1")
		require.NoError(t, err)
		require.Empty(t, infos[0].Note)
	})
}
