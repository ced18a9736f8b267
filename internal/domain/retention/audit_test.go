package retention_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/retention"
)

// insertChain appends to org's audit chain one entry recorded at each of
// at, hashed as audit.Service hashes them, and returns them.
func insertChain(ctx context.Context, t *testing.T, pool *pgxpool.Pool, org string, at ...time.Time) []audit.Entry {
	t.Helper()
	var seq int64
	var prev string
	_ = pool.QueryRow(ctx, `SELECT seq, hash FROM audit_entries WHERE organization_id = $1 ORDER BY seq DESC LIMIT 1`, org).Scan(&seq, &prev)
	var out []audit.Entry
	for i, when := range at {
		after, err := audit.Encode(map[string]any{"patterns": []string{org + "-" + when.Format(time.RFC3339)}, "n": i})
		require.NoError(t, err)
		seq++
		e := audit.Entry{
			OrganizationID: org, Seq: seq, OccurredAt: when.UTC().Truncate(time.Microsecond),
			Actor:  audit.Actor{Subject: "alice", Kind: "user", Role: "admin", ClientAddr: "192.0.2.1"},
			Action: "do_not_contact.replace", TargetType: "do_not_contact", TargetID: "org",
			Before: json.RawMessage("null"), After: after, PrevHash: prev,
		}
		e.Hash = audit.Hash(&e)
		prev = e.Hash
		_, err = pool.Exec(ctx, `INSERT INTO audit_entries (organization_id, seq, occurred_at, actor_subject, actor_kind, actor_role, client_addr,
			action, target_type, target_id, before_state, after_state, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			e.OrganizationID, e.Seq, e.OccurredAt, e.Actor.Subject, e.Actor.Kind, e.Actor.Role, e.Actor.ClientAddr,
			e.Action, e.TargetType, e.TargetID, string(e.Before), string(e.After), e.PrevHash, e.Hash)
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// export exports org's trail as GET /v1/audit/export writes it.
func export(ctx context.Context, t *testing.T, pool *pgxpool.Pool, org string) []string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	err := audit.New(pool).Export(ctx, org,
		func(a *audit.Anchor) error { return enc.Encode(audit.AnchorLine{Anchor: a}) },
		func(e *audit.Entry) error { return enc.Encode(e) })
	require.NoError(t, err)
	return strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

func verify(lines ...string) (*audit.Verified, error) {
	return audit.VerifyExport(strings.NewReader(strings.Join(lines, "")))
}

// TestService_Run_AuditEntries: entries older than retention.audit_entries
// are deleted from the front of each chain in batches; the anchor moves in
// the same transactions and an audit.prune entry records each batch; the
// export starts with the anchor and verifies from it, while an entry kept
// and altered, deleted or moved, or a changed anchor, is still detected.
func TestService_Run_AuditEntries(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	now := time.Now().UTC()
	var old, recent []time.Time
	for i := range 25 {
		old = append(old, now.Add(-500*day+time.Duration(i)*time.Minute))
	}
	for i := range 5 {
		recent = append(recent, now.Add(-10*day+time.Duration(i)*time.Minute))
	}
	a := insertChain(ctx, t, b.pool, "org-a", append(old, recent...)...)
	insertChain(ctx, t, b.pool, "org-b", recent[:3]...)
	insertChain(ctx, t, b.pool, "org-c", old[:3]...) // every entry old

	before, err := verify(export(ctx, t, b.pool, "org-a")...)
	require.NoError(t, err)
	require.Equal(t, 30, before.Entries)
	require.Nil(t, before.Anchor)

	svc, err := retention.New(&retention.Deps{Pool: b.pool, Registerer: b.reg}, &retention.Config{Batch: 10, Budget: time.Hour})
	require.NoError(t, err)
	rep, err := svc.Run(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 28, rep.Deleted["audit_entries"])
	require.LessOrEqual(t, rep.LargestBatch, int64(10))
	// org-a: 10, 10, 5; org-b: 0; org-c: 3.
	require.Equal(t, 5, rep.Batches["audit_entries"])
	require.InDelta(t, 28, value(t, svc.Metrics().Deleted.WithLabelValues("audit_entries")), 0)
	require.InDelta(t, 28, value(t, svc.Metrics().LastRunDeleted.WithLabelValues("audit_entries")), 0)

	// org-a keeps seq 26-30 and an audit.prune entry per batch; its anchor
	// names the last deleted entry's hash.
	require.EqualValues(t, 8, count(ctx, t, b.pool, `SELECT count(*) FROM audit_entries WHERE organization_id = 'org-a'`))
	require.EqualValues(t, 26, count(ctx, t, b.pool, `SELECT min(seq) FROM audit_entries WHERE organization_id = 'org-a'`))
	require.EqualValues(t, 3, count(ctx, t, b.pool, `SELECT count(*) FROM audit_entries WHERE organization_id = 'org-a' AND action = 'audit.prune' AND actor_kind = 'internal'`))
	var through, total int64
	var prevHash string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT pruned_through, prev_hash, pruned_total FROM audit_anchors WHERE organization_id = 'org-a'`).Scan(&through, &prevHash, &total))
	require.EqualValues(t, 25, through)
	require.Equal(t, a[24].Hash, prevHash)
	require.EqualValues(t, 25, total)
	require.EqualValues(t, 3, count(ctx, t, b.pool, `SELECT count(*) FROM audit_entries WHERE organization_id = 'org-b'`), "org-b's entries are recent")
	require.Zero(t, count(ctx, t, b.pool, `SELECT count(*) FROM audit_anchors WHERE organization_id = 'org-b'`))

	var last struct {
		FirstSeq int64  `json:"first_seq"`
		PrevHash string `json:"prev_hash"`
		Deleted  int64  `json:"deleted"`
	}
	var after string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT after_state FROM audit_entries WHERE organization_id = 'org-a' AND action = 'audit.prune' ORDER BY seq DESC LIMIT 1`).Scan(&after))
	require.NoError(t, json.Unmarshal([]byte(after), &last))
	require.EqualValues(t, 26, last.FirstSeq)
	require.Equal(t, a[24].Hash, last.PrevHash)
	require.EqualValues(t, 5, last.Deleted)

	runs, err := retention.OrgRuns(ctx, b.pool, "org-a")
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, "audit_entries", runs[0].Table)
	require.EqualValues(t, 25, runs[0].LastDeleted)

	// The export starts with the anchor and verifies from it.
	lines := export(ctx, t, b.pool, "org-a")
	require.Len(t, lines, 9)
	require.Contains(t, lines[0], `{"anchor":{"organization_id":"org-a","first_seq":26,"prev_hash":"`+a[24].Hash+`"`)
	v, err := verify(lines...)
	require.NoError(t, err)
	require.Equal(t, 8, v.Entries)
	require.EqualValues(t, 26, v.FirstSeq)
	require.EqualValues(t, 33, v.LastSeq)
	require.NotNil(t, v.Anchor)
	require.EqualValues(t, 25, v.Anchor.PrunedTotal)

	// What is kept is still checked.
	for name, tc := range map[string]struct {
		lines  []string
		reason string
	}{
		"KeptAltered":   {[]string{lines[0], lines[1], strings.Replace(lines[2], `"alice"`, `"mallory"`, 1), lines[3]}, "altered"},
		"KeptDeleted":   {[]string{lines[0], lines[1], lines[3], lines[4]}, "missing"},
		"FirstDeleted":  {append([]string{lines[0]}, lines[2:]...), "not at its anchor's first_seq 26"},
		"NoAnchor":      {lines[1:], "has no anchor"},
		"AnchorChanged": {append([]string{strings.Replace(lines[0], a[24].Hash, a[23].Hash, 1)}, lines[1:]...), "anchor's prev_hash"},
		"AnchorAlone":   {lines[:1], "no entries"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := verify(tc.lines...)
			require.ErrorContains(t, err, tc.reason)
		})
	}

	// An entry kept and altered in the database is detected in the next
	// export.
	_, err = b.pool.Exec(ctx, `UPDATE audit_entries SET actor_subject = 'mallory' WHERE organization_id = 'org-a' AND seq = 28`)
	require.NoError(t, err)
	_, err = verify(export(ctx, t, b.pool, "org-a")...)
	require.ErrorContains(t, err, "seq 28")
	_, err = b.pool.Exec(ctx, `UPDATE audit_entries SET actor_subject = 'alice' WHERE organization_id = 'org-a' AND seq = 28`)
	require.NoError(t, err)

	// A chain pruned whole continues from its anchor: the audit.prune entry
	// follows it, and so does the next change.
	c := export(ctx, t, b.pool, "org-c")
	require.Len(t, c, 2)
	v, err = verify(c...)
	require.NoError(t, err)
	require.EqualValues(t, 4, v.FirstSeq)
	actor := audit.Actor{Subject: "bob", Kind: "user", Role: "owner"}
	require.NoError(t, audit.New(b.pool).Record(ctx, &audit.Change{Org: "org-c", Actor: &actor, Action: "x.update", TargetType: "x", After: map[string]any{"k": 1}}))
	v, err = verify(export(ctx, t, b.pool, "org-c")...)
	require.NoError(t, err)
	require.Equal(t, 2, v.Entries)
	require.EqualValues(t, 5, v.LastSeq)

	// The next run deletes nothing and records nothing: the audit.prune
	// entries are new.
	rep, err = svc.Run(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Deleted["audit_entries"])
	require.EqualValues(t, 8, count(ctx, t, b.pool, `SELECT count(*) FROM audit_entries WHERE organization_id = 'org-a'`))

	// Forever keeps every entry.
	keep, err := retention.New(&retention.Deps{Pool: b.pool, Now: func() time.Time { return now.Add(10_000 * day) }}, &retention.Config{AuditEntries: retention.Forever})
	require.NoError(t, err)
	rep, err = keep.Run(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Deleted["audit_entries"])
}
