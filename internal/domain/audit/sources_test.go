package audit_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestList_Sources: an entry records the sources its change names (sorted,
// once each, without empty ids), or given none, for a connector or a
// database its source id; a listing with Filter.Sources
// lists the entries that name a source and none outside them (an empty
// list: none), one without lists every entry, and the chain is that of
// the entries' fields alone.
func TestList_Sources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	trail := audit.New(pool)
	actor := &audit.Actor{Subject: "alice", Kind: "user", Role: "admin"}
	for _, c := range []audit.Change{
		{Action: "invocation.approve", TargetType: "invocation", TargetID: "inv-slack", Sources: []string{"slack"}},
		{Action: "invocation.approve", TargetType: "invocation", TargetID: "inv-github", Sources: []string{"github"}},
		{Action: "dead_letter.retry", TargetType: "dead_letters", TargetID: "both", Sources: []string{"slack", "", "github", "slack"}},
		{Action: "action_modes.replace", TargetType: "action_modes", TargetID: "automation/a-slack", Sources: []string{"slack"},
			Before: map[string]string{}, After: map[string]string{"slack:send_message": "allow"}},
		{Action: "action_modes.replace", TargetType: "action_modes", TargetID: "automation/a-github", Sources: []string{"github"},
			Before: map[string]string{"github:create_issue": "deny"}, After: map[string]string{}},
		{Action: "action_modes.replace", TargetType: "action_modes", TargetID: "org", Sources: []string{"github", "connector:c-1"},
			Before: map[string]string{"github:create_issue": "deny"}, After: map[string]string{"connector:c-1:search": "allow"}},
		{Action: "do_not_contact.replace", TargetType: "do_not_contact", After: []string{"#general"}},
		{Action: "webhook.create", TargetType: "webhook", TargetID: "w-1", Sources: []string{}},
	} {
		c.Org, c.Actor = "org-1", actor
		require.NoError(t, trail.Record(ctx, &c))
	}
	other := audit.Change{Org: "org-2", Actor: actor, Action: "invocation.approve", TargetType: "invocation", TargetID: "inv-other", Sources: []string{"github"}}
	require.NoError(t, trail.Record(ctx, &other))
	// A connector's and a database's entries name their source, by id or
	// by source id; one given its sources keeps them.
	for _, c := range []audit.Change{
		{Action: "connector.update", TargetType: "connector", TargetID: "c-9"},
		{Action: "database.delete", TargetType: "database", TargetID: "database:d-1"},
		{Action: "connector.review_tools", TargetType: "connector", TargetID: "c-8", Sources: []string{"connector:c-7"}},
	} {
		c.Org, c.Actor = "org-3", actor
		require.NoError(t, trail.Record(ctx, &c))
	}
	var own []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT array_agg(array_to_string(sources, ',') ORDER BY seq) FROM audit_entries WHERE organization_id = 'org-3'`).
		Scan(&own))
	require.Equal(t, []string{"connector:c-9", "database:d-1", "connector:c-7"}, own)

	var stored [][]string
	rows, err := pool.Query(ctx, `SELECT sources FROM audit_entries WHERE organization_id = 'org-1' ORDER BY seq`)
	require.NoError(t, err)
	for rows.Next() {
		var s []string
		require.NoError(t, rows.Scan(&s))
		stored = append(stored, s)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, [][]string{
		{"slack"}, {"github"}, {"github", "slack"}, {"slack"}, {"github"}, {"connector:c-1", "github"}, {}, {},
	}, stored)

	targets := func(sources []string) []string {
		t.Helper()
		entries, next, err := trail.List(ctx, "org-1", &audit.Filter{Sources: sources})
		require.NoError(t, err)
		require.Zero(t, next)
		out := []string{}
		for i := range entries {
			require.Equal(t, entries[i].Hash, audit.Hash(&entries[i]))
			out = append(out, entries[i].TargetID)
		}
		return out
	}
	require.Equal(t, []string{"automation/a-github", "inv-github"}, targets([]string{"github"}))
	require.Equal(t, []string{"automation/a-slack", "inv-slack"}, targets([]string{"slack"}))
	require.Equal(t, []string{"automation/a-github", "automation/a-slack", "both", "inv-github", "inv-slack"}, targets([]string{"slack", "github"}))
	require.Equal(t, []string{"org", "automation/a-github", "automation/a-slack", "both", "inv-github", "inv-slack"},
		targets([]string{"slack", "github", "connector:c-1", "gmail"}))
	require.Empty(t, targets([]string{}))
	require.Equal(t, []string{"w-1", "", "org", "automation/a-github", "automation/a-slack", "both", "inv-github", "inv-slack"}, targets(nil))

	// Another filter within the claim's entries, and a page of one.
	entries, next, err := trail.List(ctx, "org-1", &audit.Filter{Sources: []string{"github", "slack"}, Action: "invocation", Limit: 1})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "inv-github", entries[0].TargetID)
	entries, _, err = trail.List(ctx, "org-1", &audit.Filter{Sources: []string{"github", "slack"}, Action: "invocation", BeforeSeq: next})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "inv-slack", entries[0].TargetID)
}
