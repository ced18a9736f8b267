package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

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
