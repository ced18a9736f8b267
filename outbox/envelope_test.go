package outbox_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/executors/plugin"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/outbox"
)

// sharedSource stands for the plugins' source, which takes the global
// bucket plugin by default.
type sharedSource struct{}

func (sharedSource) ID() string { return plugin.SourceID }

func (sharedSource) ListActions(context.Context, executors.ExecContext) ([]executors.Definition, error) {
	return []executors.Definition{{ID: "run", Tier: "R1", Params: json.RawMessage(`{"type": "object"}`)}}, nil
}

func (sharedSource) Execute(context.Context, string, json.RawMessage, executors.ExecContext) (executors.Result, error) {
	return executors.Result{}, nil
}

// An envelope may not name another source's global bucket: a Slack
// envelope naming the bucket every organization's plugin calls share
// would take its tokens and slots, and one organization could hold back
// everyone's plugin calls. Before, it was accepted. The source's own
// global bucket and an operator's (no source's default) stay nameable.
func TestService_EnvelopeNamingAnotherSourcesGlobalBucket(t *testing.T) {
	t.Parallel()
	ctx := dbutil.WithOrg(context.Background(), "org-1")
	pool := pgtest.Pool(t)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	registry, err := executors.Build([]executors.Provider{slack.Provider}, nil)
	require.NoError(t, err)
	sources := catalog.New(registry)
	require.NoError(t, sources.Add(&catalog.Source{Source: sharedSource{}, Bucket: plugin.Bucket.Name}))
	limiter, err := flow.New(pool, &flow.Config{Buckets: []flow.BucketConfig{
		slack.Provider.Bucket,
		plugin.Bucket,
		{Name: "test.bucket", Rate: 10, Burst: 5, Scope: flow.ScopeGlobal},
	}})
	require.NoError(t, err)
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	svc, err := outbox.New(&outbox.Deps{Pool: pool, River: client, Sources: sources, Box: box, Flow: limiter}, &outbox.Config{})
	require.NoError(t, err)
	by := outbox.Enqueuer{OrganizationID: "org-1", RequestedBy: "svc", AutomationID: "nightly"}
	named := func(id, bucket string) outbox.Envelope {
		env := slackEnvelope(id)
		env.Constraints.RateBucket = bucket
		return env
	}
	stored := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM action_invocations`).Scan(&n))
		return n
	}

	_, _, err = svc.Enqueue(ctx, &outbox.EnqueueParams{Enqueuer: by, Envelope: named("plugin-1", plugin.Bucket.Name)})
	var invalid *errs.ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "constraints.rate_bucket", invalid.Fields[0].Field)
	require.Contains(t, invalid.Message, "shared by every organization")
	items, err := svc.EnqueueBatch(ctx, &by, []outbox.Envelope{named("plugin-2", plugin.Bucket.Name)})
	require.NoError(t, err)
	require.ErrorAs(t, items[0].Err, &invalid)
	require.Zero(t, stored(), "a refused envelope stores nothing")

	// The source's own global bucket, an operator's global bucket and
	// another source's org bucket are fine.
	own := outbox.Envelope{ExternalID: "own", Tool: outbox.EnvelopeTool{Source: plugin.SourceID, Action: "run"}, Args: json.RawMessage(`{}`),
		Constraints: outbox.EnvelopeConstraints{RateBucket: plugin.Bucket.Name}}
	for _, env := range []outbox.Envelope{own, named("operator", "test.bucket"), named("org", "slack.minute")} {
		inv, created, err := svc.Enqueue(ctx, &outbox.EnqueueParams{Enqueuer: by, Envelope: env})
		require.NoError(t, err, env.ExternalID)
		require.True(t, created)
		require.Equal(t, env.Constraints.RateBucket, *inv.RateBucket)
	}
	require.Equal(t, 3, stored())
}

// An operator may make the bucket of a kind of source organizations
// register (connector, database) global: every organization's connector
// calls then share it. An organization with no connector could still name
// it from a Slack envelope, since its own sources showed no connector
// taking it; it is refused as another source's, storing nothing.
func TestService_EnvelopeNamingAKindsGlobalBucket(t *testing.T) {
	t.Parallel()
	ctx := dbutil.WithOrg(context.Background(), "org-1")
	pool := pgtest.Pool(t)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	registry, err := executors.Build([]executors.Provider{slack.Provider}, nil)
	require.NoError(t, err)
	global := func(b flow.BucketConfig) flow.BucketConfig {
		b.Scope = flow.ScopeGlobal
		return b
	}
	limiter, err := flow.New(pool, &flow.Config{Buckets: []flow.BucketConfig{slack.Provider.Bucket, global(mcp.Bucket), global(database.Bucket)}})
	require.NoError(t, err)
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	sources := catalog.New(registry)
	for _, k := range []emptyKind{{mcp.SourcePrefix, mcp.Bucket.Name}, {database.SourcePrefix, database.Bucket.Name}} {
		require.NoError(t, sources.Register(k))
	}
	svc, err := outbox.New(&outbox.Deps{Pool: pool, River: client, Sources: sources, Box: box, Flow: limiter}, &outbox.Config{})
	require.NoError(t, err)
	by := outbox.Enqueuer{OrganizationID: "org-1", RequestedBy: "svc", AutomationID: "nightly"}

	for _, bucket := range []string{mcp.Bucket.Name, database.Bucket.Name} {
		env := slackEnvelope("kind-" + bucket)
		env.Constraints.RateBucket = bucket
		_, _, err := svc.Enqueue(ctx, &outbox.EnqueueParams{Enqueuer: by, Envelope: env})
		var invalid *errs.ValidationError
		require.ErrorAs(t, err, &invalid, bucket)
		require.Equal(t, "constraints.rate_bucket", invalid.Fields[0].Field)
		require.Contains(t, invalid.Message, "shared by every organization")
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM action_invocations`).Scan(&n))
	require.Zero(t, n, "a refused envelope stores nothing")
}

// emptyKind is a kind of org-registered source (catalog.Kind) of which
// no organization has any: only its prefix and bucket matter here.
type emptyKind struct{ prefix, bucket string }

func (k emptyKind) Prefix() string { return k.prefix }
func (k emptyKind) Bucket() string { return k.bucket }
func (emptyKind) List(context.Context, string) ([]*catalog.Source, error) {
	return nil, nil
}
func (emptyKind) Source(context.Context, string, string) (*catalog.Source, error) {
	return nil, errs.NotFound
}
