package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/worker"
)

// An organization asking for more than its fair rate has its further
// jobs queued behind another organization's: an envelope of the second,
// posted after the first's flood, runs before the flood's rest.
func TestFairness_FloodQueuesBehindAnotherOrganization(t *testing.T) {
	t.Parallel()

	b := apptest.Start(t, &apptest.Options{
		// A burst of 5 and next to no rate: the flood's sixth envelope on
		// is past it. One worker runs the jobs one at a time, in the
		// order they are fetched.
		Outbox: outbox.Config{FairRate: 0.001, FairBurst: 5},
		Worker: worker.Config{MaxWorkers: 1},
	})
	ctx := context.Background()
	b.StoreSlackToken("xoxb-flood")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	owner2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	service2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindService, AutomationID: "neighbour"})
	r := b.Do("PUT", "/v1/credentials/slack", owner2, map[string]string{"token": "xoxb-neighbour"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("PUT", "/v1/action-modes", owner2, map[string]string{"slack:send_message": "allow"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// Nothing runs until both have asked.
	require.NoError(t, b.App.River.QueuePause(ctx, invocation.QueueActions, nil))
	const flood = 20
	items := make([]any, flood)
	for i := range items {
		items[i] = envelope(fmt.Sprintf("flood-%02d", i+1), nil)
	}
	r = b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": items})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("POST", "/v1/envelopes", service2, envelope("neighbour-1", nil))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

	// The flood's first five are within its burst, the rest behind; the
	// neighbour's is not.
	var behind, neighbour int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE i.organization_id = $1 AND j.priority = 2),
		count(*) FILTER (WHERE i.organization_id = 'org-2' AND j.priority = 1)
		FROM action_invocations i JOIN river_job j ON j.id = i.job_id`, apptest.Org).Scan(&behind, &neighbour))
	require.Equal(t, flood-5, behind, "the flood's jobs past its burst queue behind")
	require.Equal(t, 1, neighbour, "the neighbour's job does not")
	metrics := b.Do("GET", "/metrics", "", nil)
	require.Contains(t, string(metrics.Raw), fmt.Sprintf("outboxd_invocations_behind_total %d\n", flood-5))

	require.NoError(t, b.App.River.QueueResume(ctx, invocation.QueueActions, nil))
	deadline := time.Now().Add(60 * time.Second)
	for len(b.Slack.Posts()) < flood+1 {
		require.True(t, time.Now().Before(deadline), "only %d of %d posts in 60s", len(b.Slack.Posts()), flood+1)
		time.Sleep(50 * time.Millisecond)
	}
	var texts []string
	for _, p := range b.Slack.Posts() {
		texts = append(texts, fmt.Sprint(p.Body["text"]))
	}
	at := slices.Index(texts, "envelope neighbour-1")
	require.GreaterOrEqual(t, at, 0, "the neighbour's post: %v", texts)
	for _, later := range texts[at+1:] {
		require.Contains(t, later, "envelope flood-", "posts after the neighbour's: %v", texts)
	}
	require.Equal(t, flood-5, len(texts)-at-1, "every job behind ran after the neighbour's: %v", texts)
}

// An approval releases its job at the place its organization's fair rate
// gives it then: approvals at once past the rate queue behind, whatever
// place their invocations were given when asked for.
func TestFairness_ApprovalsPastTheRateQueueBehind(t *testing.T) {
	t.Parallel()

	// A burst of 5 and next to no rate: three invocations asked for take
	// three, the first two approvals the rest.
	b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{FairRate: 0.001, FairBurst: 5}})
	ctx := context.Background()
	b.StoreSlackToken("xoxb-approvals")
	b.SetModes(map[string]string{"slack:send_message": "require_approval"})
	require.NoError(t, b.App.River.QueuePause(ctx, invocation.QueueActions, nil))
	var ids []string
	for i := range 3 {
		env := postEnvelope(t, b, envelope(fmt.Sprintf("approve-%d", i+1), nil), http.StatusCreated)
		require.Equal(t, "pending", env["invocation_status"])
		ids = append(ids, env["action_id"].(string))
	}
	priority := func(id string) (p int) {
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT j.priority FROM action_invocations i JOIN river_job j ON j.id = i.job_id
			WHERE i.id = $1`, id).Scan(&p))
		return p
	}
	for _, id := range ids {
		require.Equal(t, 1, priority(id), "asked for within the burst")
	}
	for i, id := range ids {
		r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		want := 1
		if i == 2 {
			want = 2
		}
		require.Equal(t, want, priority(id), "approval %d: released past the burst queues behind", i+1)
	}
	metrics := b.Do("GET", "/metrics", "", nil)
	require.Contains(t, string(metrics.Raw), "outboxd_invocations_behind_total 1\n")
}

// The webhook deliveries and Slack approval messages of an organization
// past its fair rate queue behind another organization's, as its
// invocations do.
func TestFairness_RelayJobsQueueBehind(t *testing.T) {
	t.Parallel()

	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(receiver.Close)
	for _, tc := range []struct {
		name, mode string
		setup      func(b *apptest.Bundle, owner string) *apptest.Response
		// jobs counts the relay's jobs by organization and priority.
		jobs string
	}{{
		name: "webhook deliveries", mode: "allow",
		setup: func(b *apptest.Bundle, owner string) *apptest.Response {
			return b.Do("POST", "/v1/webhooks", owner, map[string]any{"url": receiver.URL, "events": []string{"action_completed"}})
		},
		jobs: `SELECT d.organization_id, j.priority, count(*)::int
			FROM river_job j JOIN webhook_deliveries d ON d.id = (j.args->>'delivery_id')::uuid
			WHERE j.kind = 'webhook_deliver' GROUP BY 1, 2 ORDER BY 1, 2`,
	}, {
		name: "slack approval messages", mode: "require_approval",
		setup: func(b *apptest.Bundle, owner string) *apptest.Response {
			return b.Do("PUT", "/v1/notifications/slack", owner, map[string]any{"channel": "C0123456789"})
		},
		jobs: `SELECT i.organization_id, j.priority, count(*)::int
			FROM river_job j JOIN action_invocations i ON i.id = (j.args->>'invocation_id')::uuid
			WHERE j.kind = 'slack_post_approval' GROUP BY 1, 2 ORDER BY 1, 2`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{FairRate: 0.001, FairBurst: 5}})
			owner2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
			service2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindService, AutomationID: "neighbour"})
			for _, owner := range []string{b.Owner(), owner2} {
				r := b.Do("PUT", "/v1/credentials/slack", owner, map[string]string{"token": "xoxb-fair"})
				require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
				r = b.Do("PUT", "/v1/action-modes", owner, map[string]string{"slack:send_message": tc.mode})
				require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
				r = tc.setup(b, owner)
				require.Less(t, r.Status, 300, string(r.Raw))
			}
			const flood = 20
			items := make([]any, flood)
			for i := range items {
				items[i] = envelope(fmt.Sprintf("flood-%02d", i+1), nil)
			}
			r := b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": items})
			require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
			r = b.Do("POST", "/v1/envelopes", service2, envelope("neighbour-1", nil))
			require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

			// Each invocation makes one job of the relay, which stays in
			// river_job once done, with the priority it was inserted at.
			type count struct {
				Org      string
				Priority int
				N        int
			}
			var got []count
			deadline := time.Now().Add(60 * time.Second)
			for {
				rows, err := b.Pool.Query(context.Background(), tc.jobs)
				require.NoError(t, err)
				got, err = pgx.CollectRows(rows, pgx.RowToStructByPos[count])
				require.NoError(t, err)
				total := 0
				for _, c := range got {
					total += c.N
				}
				if total >= flood+1 {
					break
				}
				require.True(t, time.Now().Before(deadline), "jobs in 60s: %v", got)
				time.Sleep(100 * time.Millisecond)
			}
			require.Equal(t, []count{{apptest.Org, 1, 5}, {apptest.Org, 2, flood - 5}, {"org-2", 1, 1}}, got,
				"the flood's jobs past its burst queue behind, the neighbour's do not")
		})
	}
}
