package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/worker"
)

// metric reads a sample of /metrics, 0 when it is not there.
func metric(t *testing.T, b *apptest.Bundle, sample string) float64 {
	t.Helper()
	r := b.Do("GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, r.Status)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindStringSubmatch(string(r.Raw))
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// A provider's 429 drains the bucket and the jobs it then delays are
// counted, by bucket: ops see a bucket holding jobs back.
func TestExecute_BucketDrainsAndWaitsAreCounted(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{SlackFunc: limitedOnce("2")})
	allowSlack(b)
	first := enqueue(t, b, "count-drain-1")
	// The drain is recorded before the invocation notes the 429.
	require.Eventually(t, func() bool {
		e, _ := b.Invocation(first)["error"].(string)
		return strings.Contains(e, "ratelimited")
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1.0, metric(t, b, `outboxd_rate_bucket_drains_total{bucket="slack.minute"}`))

	// The next job of the bucket waits for the drain to end.
	second := enqueue(t, b, "count-drain-2")
	b.WaitStatus(second, invocation.StatusCompleted, 15*time.Second)
	b.WaitStatus(first, invocation.StatusCompleted, 15*time.Second)
	require.GreaterOrEqual(t, metric(t, b, `outboxd_rate_bucket_waits_total{bucket="slack.minute"}`), 1.0)
	require.Equal(t, 1.0, metric(t, b, `outboxd_rate_bucket_drains_total{bucket="slack.minute"}`))
}

// A job that took its bucket's token and was then skipped by a gate (or
// held by quiet hours) made no call: the token goes back to the bucket and
// the next job runs on it. Before, it was spent, and with a bucket of one
// token an hour the next job waited the hour.
func TestExecuteWorker_GateRefundsTheToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUnit(t)
	// The limiter's rows live in a database of their own: what it holds
	// does not depend on the test's transaction.
	pool := pgtest.Pool(t)
	limiter, err := flow.New(pool, &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "test.one", Rate: 1, Interval: time.Hour, Burst: 1, MaxConcurrency: 1, Scope: flow.ScopeOrg},
		{Name: "test.two", Rate: 1, Interval: time.Hour, Burst: 1, Scope: flow.ScopeOrg},
		{Name: "test.three", Rate: 1, Interval: time.Hour, Burst: 1, Scope: flow.ScopeOrg},
	}})
	require.NoError(t, err)
	src, err := slack.New(&slack.Config{BaseURL: b.slack.Server.URL})
	require.NoError(t, err)
	w := worker.NewExecuteWorker(&worker.Deps{
		Pool: pool, DB: b.tx, Sources: registrySources{executors.NewRegistry(src)}, Tokens: b.creds, Box: b.box,
		Metrics: b.metrics, Flow: limiter,
	}, &worker.Config{RetryBaseDelay: time.Second})
	runner := rivertest.NewWorker(t, riverpgxv5.New(pool), &river.Config{}, w)
	to := func(channel string, bucket ...string) func(p *invocation.CreateParams) {
		return func(p *invocation.CreateParams) {
			p.RateBucket = "test.one"
			if len(bucket) > 0 {
				p.RateBucket = bucket[0]
			}
			p.Params = json.RawMessage(`{"channel":"` + channel + `","text":"hi"}`)
		}
	}
	_, err = b.tx.Exec(ctx, `INSERT INTO do_not_contact (organization_id, pattern, created_by) VALUES ('org-1', 'C0NOPE*', 'ops')`)
	require.NoError(t, err)

	skipped, job := b.approved(t, to("C0NOPE1"))
	res, err := runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	got, err := b.store.Get(ctx, b.tx, "org-1", skipped.ID)
	require.NoError(t, err)
	require.Equal(t, invocation.StatusSkipped, got.Status)

	sent, job := b.approved(t, to("C0123456789"))
	res, err = runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "the job waited for a token the skipped job spent")
	got, err = b.store.Get(ctx, b.tx, "org-1", sent.ID)
	require.NoError(t, err)
	require.Equal(t, invocation.StatusCompleted, got.Status)
	require.Len(t, b.slack.Requests(), 1)

	// The call spent the token: the next job waits, and leaves the token
	// of the hour untouched.
	_, job = b.approved(t, to("C0123456789"))
	res, err = runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)

	// A job quiet hours hold gives its token back too.
	b.quietHours(t, 60, 60)
	_, job = b.approved(t, to("C0123456789", "test.two"))
	res, err = runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	_, err = b.tx.Exec(ctx, `DELETE FROM quiet_hours`)
	require.NoError(t, err)
	_, job = b.approved(t, to("C0123456789", "test.two"))
	res, err = runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "the job waited for a token the held job spent")

	// So do a job its organization's pause holds and one whose invocation
	// was cancelled before it ran.
	_, err = b.tx.Exec(ctx, `INSERT INTO org_pauses (organization_id, paused_by) VALUES ('org-1', 'ops')`)
	require.NoError(t, err)
	_, job = b.approved(t, to("C0123456789", "test.three"))
	res, err = runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	_, err = b.tx.Exec(ctx, `DELETE FROM org_pauses`)
	require.NoError(t, err)
	cancelled, job := b.approved(t, to("C0123456789", "test.three"))
	_, err = b.tx.Exec(ctx, `UPDATE action_invocations SET status = 'cancelled' WHERE id = $1`, cancelled.ID)
	require.NoError(t, err)
	res, err = runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	_, job = b.approved(t, to("C0123456789", "test.three"))
	res, err = runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "the job waited for a token the paused or cancelled job spent")
	require.Len(t, b.slack.Requests(), 3)
}

// ownBucketSources is registrySources whose sources take bucket by
// default, as Slack takes slack.minute.
type ownBucketSources struct {
	registrySources
	bucket string
}

func (s ownBucketSources) Source(ctx context.Context, org, id string) (*catalog.Source, error) {
	src, err := s.registrySources.Source(ctx, org, id)
	if err == nil {
		src.Bucket = s.bucket
	}
	return src, err
}

// An envelope naming a generous bucket (constraints.rate_bucket) is still
// held by its source's own: its job takes a token from both, and waits
// when the source's is empty. Before, the named bucket replaced the
// source's, and an automation escaped its provider's limit by naming an
// operator's bucket. A job that waits gives back the token the other
// bucket gave.
func TestExecuteWorker_NamedBucketKeepsTheSourcesOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUnit(t)
	pool := pgtest.Pool(t)
	limiter, err := flow.New(pool, &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "test.provider", Rate: 1, Interval: time.Hour, Burst: 1, Scope: flow.ScopeOrg},
		{Name: "test.generous", Rate: 1, Interval: time.Hour, Burst: 2, Scope: flow.ScopeOrg},
	}})
	require.NoError(t, err)
	src, err := slack.New(&slack.Config{BaseURL: b.slack.Server.URL})
	require.NoError(t, err)
	w := worker.NewExecuteWorker(&worker.Deps{
		Pool: pool, DB: b.tx, Sources: ownBucketSources{registrySources{executors.NewRegistry(src)}, "test.provider"},
		Tokens: b.creds, Box: b.box, Metrics: b.metrics, Flow: limiter,
	}, &worker.Config{RetryBaseDelay: time.Second})
	runner := rivertest.NewWorker(t, riverpgxv5.New(pool), &river.Config{}, w)
	named := func(p *invocation.CreateParams) { p.RateBucket = "test.generous" }

	_, job := b.approved(t, named)
	res, err := runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	_, job = b.approved(t, named)
	res, err = runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "the source's bucket had no token left")
	require.Len(t, b.slack.Requests(), 1)

	var tokens float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT tokens FROM flow_buckets WHERE name = 'test.generous'`).Scan(&tokens))
	require.InDelta(t, 1, tokens, 0.01, "the waiting job gave back the named bucket's token")
}
