package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestQueue_OperatorPausesEveryOrganization: River's shared queue is the
// operator's, through the CLI on the database. Paused, no organization's
// actions run; `queue list` counts every organization's jobs; resumed,
// they all run.
func TestQueue_OperatorPausesEveryOrganization(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-org-1")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	owner2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	service2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindService, AutomationID: "automation-1"})
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/credentials/slack", owner2, map[string]string{"token": "xoxb-org-2"}).Status)
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/action-modes", owner2, map[string]string{"slack:send_message": "allow"}).Status)
	send := func(token, externalID string) string {
		r := b.Do("POST", "/v1/envelopes", token, map[string]any{
			"external_id": externalID,
			"tool":        map[string]string{"source": "slack", "action": "send_message"},
			"args":        map[string]string{"channel": "C0123456789", "text": "hello"},
		})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		return r.Body["action_id"].(string)
	}
	// The first envelope makes the worker serve the actions queue.
	b.WaitStatus(send(b.Service(), "warmup"), invocation.StatusCompleted, 15*time.Second)

	env := []string{"DATABASE_URL=" + b.DBURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
	// River's producer announces when it has paused; only then is nothing
	// fetched any more.
	events, unsubscribe := b.App.River.Subscribe(river.EventKindQueuePaused)
	defer unsubscribe()
	code, out := run(t, env, "queue", "pause", "actions")
	require.Equal(t, 0, code, out)
	select {
	case e := <-events:
		require.Equal(t, invocation.QueueActions, e.Queue.Name)
	case <-time.After(15 * time.Second):
		t.Fatal("the producer of the actions queue never paused")
	}
	ids := []string{send(b.Service(), "paused-1"), send(service2, "paused-2")}
	code, out = run(t, env, "queue", "list")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `actions\s+true\s+available\s+2\s`, out, "both organizations' jobs, counted by the operator")

	for _, id := range ids {
		var state string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT j.state::text FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, id).Scan(&state))
		require.Equal(t, "available", state, "a paused queue runs nothing")
	}
	require.Len(t, b.Slack.Requests(), 1)

	code, out = run(t, env, "queue", "resume", "actions")
	require.Equal(t, 0, code, out)
	for _, id := range ids {
		require.Eventually(t, func() bool {
			var status string
			require.NoError(t, b.Pool.QueryRow(ctx, `SELECT status FROM action_invocations WHERE id = $1`, id).Scan(&status))
			return status == "completed"
		}, 15*time.Second, 20*time.Millisecond)
	}
	require.Len(t, b.Slack.Requests(), 3)
}

// TestQueueList_ScheduledJobsShowWhenDue: the first scheduled (or
// retryable) job of a queue is usually due later; `queue list` says when,
// not an age below zero. A count at the cap says it is at least that.
func TestQueueList_ScheduledJobsShowWhenDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, conn := testDB(t)
	_, err := conn.Exec(ctx, `
		INSERT INTO river_queue (name, updated_at) VALUES ('actions', now());
		INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at) VALUES
			('{}', 'execute', 5, 'actions', 'available', now() - interval '90 seconds'),
			('{}', 'execute', 5, 'actions', 'scheduled', now() + interval '1 hour'),
			('{}', 'execute', 5, 'actions', 'retryable', now() + interval '10 minutes');
		INSERT INTO river_job (args, kind, max_attempts, queue, state, finalized_at)
		SELECT '{}', 'execute', 5, 'actions', 'completed', now() FROM generate_series(1, 10001);`)
	require.NoError(t, err)

	code, out := run(t, []string{"DATABASE_URL=" + dbURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}, "queue", "list")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `actions\s+false\s+available\s+1\s+1m3\ds\n`, out)
	require.Regexp(t, `actions\s+false\s+scheduled\s+1\s+in (59m5\ds|1h0m0s)\n`, out)
	require.Regexp(t, `actions\s+false\s+retryable\s+1\s+in (9m5\ds|10m0s)\n`, out)
	require.Regexp(t, `actions\s+false\s+completed\s+10000\+\s+-\n`, out, "counting stops at the cap, at least that many")
	require.Regexp(t, `actions\s+false\s+cancelled\s+0\s+-\n`, out)
	require.NotContains(t, out, " -5", "no negative age")
}

// TestDLQList_OneRowPerDeadLetterInUTC: a provider's error that spans
// lines stays on its dead letter's row, and the time is UTC, as the API
// shows it, whatever the operator's time zone.
func TestDLQList_OneRowPerDeadLetterInUTC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, conn := testDB(t)
	var id string
	require.NoError(t, conn.QueryRow(ctx, `
		INSERT INTO action_invocations (organization_id, requested_by, origin, integration, action, risk_level, mode, mode_source,
		                                params, params_hash, status, error, dead_lettered_at, attempt)
		VALUES ('org-1', 'someone', 'invoke', 'slack', 'send_message', 'write', 'allow', 'override',
		        '{}', 'h', 'failed', E'slack: HTTP 503:\n<html>\tdown</html>', '2026-01-02 03:04:05+00', 3)
		RETURNING id`).Scan(&id))

	code, out := run(t, []string{"DATABASE_URL=" + dbURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY=", "TZ=Asia/Tokyo"},
		"dlq", "list", "--org", "org-1")
	require.Equal(t, 0, code, out)
	require.Regexp(t, id+`\s+slack\.send_message\s+3\s+2026-01-02T03:04:05Z\s+slack: HTTP 503: <html> down</html>\n1 dead letter\(s\)\n`, out)
}

// testDB returns a migrated test database's URL and a connection to it,
// closed when the test ends.
func testDB(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dbURL := pgtest.URL(t)
	conn, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return dbURL, conn
}
