// Package retentionstore holds the SQL of retention and of purging an
// organization. It runs through the owner's pool: both work across every
// organization's rows, which the tenant role's policies would hide.
package retentionstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Store runs retention's and purge's statements on the connection it is
// given.
type Store struct {
	q *dbsqlc.Queries
}

// New returns a Store.
func New() *Store { return &Store{q: dbsqlc.New()} }

// InvocationOrgs lists the organizations that have finished invocations.
func (s *Store) InvocationOrgs(ctx context.Context, db dbutil.DB) ([]string, error) {
	orgs, err := s.q.RetentionInvocationOrgs(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("listing organizations with finished invocations: %w", err)
	}
	return orgs, nil
}

// DeleteInvocations deletes up to limit of org's invocations that finished
// before cutoff, with their events, and returns how many of each it
// deleted. Unfinished invocations are never deleted.
func (s *Store) DeleteInvocations(ctx context.Context, db dbutil.DB, org string, cutoff time.Time, limit int) (invocations, events int64, err error) {
	row, err := s.q.RetentionDeleteInvocations(ctx, db, dbsqlc.RetentionDeleteInvocationsParams{
		OrganizationID: org, Cutoff: cutoff, MaxRows: int32(limit),
	})
	if err != nil {
		return 0, 0, fmt.Errorf("deleting finished invocations: %w", err)
	}
	return row.Invocations, row.Events, nil
}

// Webhook is an endpoint and its organization.
type Webhook struct {
	ID  uuid.UUID
	Org string
}

// Webhooks lists every webhook endpoint.
func (s *Store) Webhooks(ctx context.Context, db dbutil.DB) ([]Webhook, error) {
	rows, err := s.q.RetentionWebhooks(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("listing webhooks: %w", err)
	}
	out := make([]Webhook, len(rows))
	for i, r := range rows {
		out[i] = Webhook{ID: r.ID, Org: r.OrganizationID}
	}
	return out, nil
}

// Run is what retention deleted of an organization in one table: in the
// last run that deleted any, and in all.
type Run struct {
	Org          string
	Table        string
	LastRunAt    time.Time
	LastDeleted  int64
	DeletedTotal int64
}

// Record adds the rows a run deleted, one Run (Org, Table, LastDeleted)
// per organization and table, to what retention_runs holds.
func (s *Store) Record(ctx context.Context, db dbutil.DB, runs []Run) error {
	var p dbsqlc.RetentionRecordParams
	for _, r := range runs {
		p.Orgs, p.Tables, p.Counts = append(p.Orgs, r.Org), append(p.Tables, r.Table), append(p.Counts, r.LastDeleted)
	}
	if err := s.q.RetentionRecord(ctx, db, p); err != nil {
		return fmt.Errorf("recording what retention deleted: %w", err)
	}
	return nil
}

// RunsOf returns what retention deleted of org, by table.
func (s *Store) RunsOf(ctx context.Context, db dbutil.DB, org string) ([]Run, error) {
	rows, err := s.q.RetentionRunsOf(ctx, db, org)
	if err != nil {
		return nil, fmt.Errorf("reading what retention deleted: %w", err)
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = Run{Org: org, Table: r.TableName, LastRunAt: r.LastRunAt, LastDeleted: r.LastDeleted, DeletedTotal: r.DeletedTotal}
	}
	return out, nil
}

// DeleteWebhookDeliveries deletes up to limit of an endpoint's deliveries
// created before cutoff that are over, and returns how many it deleted.
func (s *Store) DeleteWebhookDeliveries(ctx context.Context, db dbutil.DB, webhook uuid.UUID, cutoff time.Time, limit int) (int64, error) {
	n, err := s.q.RetentionDeleteWebhookDeliveries(ctx, db, dbsqlc.RetentionDeleteWebhookDeliveriesParams{
		WebhookID: webhook, Cutoff: cutoff, MaxRows: int32(limit),
	})
	if err != nil {
		return 0, fmt.Errorf("deleting old webhook deliveries: %w", err)
	}
	return n, nil
}

// ClearPreviousSecrets forgets every webhook signing secret a rotation
// replaced whose overlap has ended (by Postgres's clock), and returns how
// many it forgot.
func (s *Store) ClearPreviousSecrets(ctx context.Context, db dbutil.DB) (int64, error) {
	n, err := s.q.RetentionClearPreviousSecrets(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("clearing the webhooks' expired previous secrets: %w", err)
	}
	return n, nil
}

// PurgeTable is one table an organization's rows are purged from.
type PurgeTable struct {
	// Name is the table's; flow_leases stands for the organization's
	// leases in the rows of global buckets, which stay (PurgeFlowLeases).
	Name string
	// Delete deletes a batch of org's rows, at most limit, and returns how
	// many, and whether the table may hold more of them (false: done).
	// flow_leases counts leases, limit bounds the bucket rows it changes.
	Delete func(ctx context.Context, db dbutil.DB, org string, limit int) (deleted int64, more bool, err error)
}

// riverJobsOfOrg finds an organization's River jobs as the tenant policy
// on river_job does (migration 021): by the organization in their args, or
// by the invocation or webhook delivery they name. The invocation and the
// delivery are looked up by primary key, once per job: a scalar subquery
// is never made into a hash of every invocation of the organization (an
// EXISTS or IN is), so a job costs the same however many invocations the
// organization has. River's table is not in sqlc's schema, hence the
// literals.
const riverJobsOfOrg = `
(j.args->'bucket'->>'org' = $1::text
 OR j.args->>'organization_id' = $1::text
 OR (SELECT i.organization_id FROM action_invocations i WHERE i.id = (j.args->>'invocation_id')::uuid) = $1::text
 OR (SELECT d.organization_id FROM webhook_deliveries d WHERE d.id = (j.args->>'delivery_id')::uuid) = $1::text)`

const riverJobsCountSQL = `SELECT count(*) FROM river_job j WHERE ` + riverJobsOfOrg

// riverJobsPurgeSQL deletes the organization's jobs among the next $3 jobs
// after id $2, and returns how many it deleted and the last id it read
// (0 when none was left). River's jobs cannot be found by what their args
// name but by reading them (migration 018 dropped the index on args), so
// the purge reads the table once, in order of id, a batch at a time:
// finding the next batch among the jobs deleted before, or matching each
// job against all of the organization's invocations, made each batch cost
// as much as the whole organization. A purge reads every organization's
// jobs once, as many as River's job retention keeps, each batch costing
// as much as the jobs it reads.
const riverJobsPurgeSQL = `
WITH batch AS (
    SELECT j.id, j.args FROM river_job j WHERE j.id > $2::bigint ORDER BY j.id LIMIT $3::int
), doomed AS (
    DELETE FROM river_job d USING batch j WHERE d.id = j.id AND ` + riverJobsOfOrg + `
    RETURNING 1
)
SELECT (SELECT count(*) FROM doomed), coalesce((SELECT max(id) FROM batch), 0)`

// riverJobs returns river_job's PurgeTable. It reads the table once, in
// order of id: its Delete keeps its place from one batch to the next, so
// it serves one purge.
func riverJobs() PurgeTable {
	var after int64
	return PurgeTable{Name: "river_job", Delete: func(ctx context.Context, db dbutil.DB, org string, limit int) (int64, bool, error) {
		var deleted, last int64
		if err := db.QueryRow(ctx, riverJobsPurgeSQL, org, after, limit).Scan(&deleted, &last); err != nil {
			return 0, false, err
		}
		if last == 0 {
			return deleted, false, nil
		}
		after = last
		return deleted, true, nil
	}}
}

// execRows adapts a generated :execrows purge query: the table may hold
// more of the organization's rows while a batch comes back full.
func execRows[P any](q func(context.Context, dbsqlc.DBTX, P) (int64, error), params func(org string, limit int32) P) func(context.Context, dbutil.DB, string, int) (int64, bool, error) {
	return func(ctx context.Context, db dbutil.DB, org string, limit int) (int64, bool, error) {
		n, err := q(ctx, db, params(org, int32(limit)))
		return n, n >= int64(limit), err
	}
}

// PurgeTables lists, in the order they are purged, every table that holds
// an organization's rows: River's jobs first (they are found through the
// invocations and deliveries they name), then what refers to invocations
// and webhooks (approvals and waits cascade from their invocation, so they
// go first to be counted; grants name the invocation they were made from), then
// those, then the organization's settings, its pause last. Its leases in
// global buckets (flow_leases) go with its own bucket rows. A test checks
// every table with an organization_id column is here. sourceBuckets are
// the rate buckets configured per source (flow.ScopeSource), whose rows
// are keyed "<org>/<source>" (PurgeFlowBuckets). The list serves one
// purge (riverJobs).
func (s *Store) PurgeTables(sourceBuckets []string) []PurgeTable {
	q := s.q
	sourceBuckets = nonNil(sourceBuckets)
	return []PurgeTable{
		riverJobs(),
		{Name: "invocation_events", Delete: execRows(q.PurgeInvocationEvents, func(org string, n int32) dbsqlc.PurgeInvocationEventsParams {
			return dbsqlc.PurgeInvocationEventsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "slack_messages", Delete: execRows(q.PurgeSlackMessages, func(org string, n int32) dbsqlc.PurgeSlackMessagesParams {
			return dbsqlc.PurgeSlackMessagesParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "invocation_previews", Delete: execRows(q.PurgeInvocationPreviews, func(org string, n int32) dbsqlc.PurgeInvocationPreviewsParams {
			return dbsqlc.PurgeInvocationPreviewsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "invocation_approvals", Delete: execRows(q.PurgeInvocationApprovals, func(org string, n int32) dbsqlc.PurgeInvocationApprovalsParams {
			return dbsqlc.PurgeInvocationApprovalsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "invocation_waits", Delete: execRows(q.PurgeInvocationWaits, func(org string, n int32) dbsqlc.PurgeInvocationWaitsParams {
			return dbsqlc.PurgeInvocationWaitsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "grants", Delete: execRows(q.PurgeGrants, func(org string, n int32) dbsqlc.PurgeGrantsParams {
			return dbsqlc.PurgeGrantsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "webhook_deliveries", Delete: execRows(q.PurgeWebhookDeliveries, func(org string, n int32) dbsqlc.PurgeWebhookDeliveriesParams {
			return dbsqlc.PurgeWebhookDeliveriesParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "action_invocations", Delete: execRows(q.PurgeActionInvocations, func(org string, n int32) dbsqlc.PurgeActionInvocationsParams {
			return dbsqlc.PurgeActionInvocationsParams{OrganizationID: org, MaxRows: n}
		})},
		// Before webhooks: the rows of the webhook bucket are keyed by
		// endpoint.
		{Name: "flow_buckets", Delete: execRows(q.PurgeFlowBuckets, func(org string, n int32) dbsqlc.PurgeFlowBucketsParams {
			return dbsqlc.PurgeFlowBucketsParams{OrganizationID: org, SourceBuckets: sourceBuckets, MaxRows: n}
		})},
		{Name: "flow_leases", Delete: func(ctx context.Context, db dbutil.DB, org string, limit int) (int64, bool, error) {
			r, err := q.PurgeFlowLeases(ctx, db, dbsqlc.PurgeFlowLeasesParams{OrganizationID: org, MaxRows: int32(limit)})
			return r.Leases, r.Rows >= int64(limit), err
		}},
		{Name: "webhooks", Delete: execRows(q.PurgeWebhooks, func(org string, n int32) dbsqlc.PurgeWebhooksParams {
			return dbsqlc.PurgeWebhooksParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "action_modes", Delete: execRows(q.PurgeActionModes, func(org string, n int32) dbsqlc.PurgeActionModesParams {
			return dbsqlc.PurgeActionModesParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "approval_policies", Delete: execRows(q.PurgeApprovalPolicies, func(org string, n int32) dbsqlc.PurgeApprovalPoliciesParams {
			return dbsqlc.PurgeApprovalPoliciesParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "credentials", Delete: execRows(q.PurgeCredentials, func(org string, n int32) dbsqlc.PurgeCredentialsParams {
			return dbsqlc.PurgeCredentialsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "org_connectors", Delete: execRows(q.PurgeOrgConnectors, func(org string, n int32) dbsqlc.PurgeOrgConnectorsParams {
			return dbsqlc.PurgeOrgConnectorsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "org_databases", Delete: execRows(q.PurgeOrgDatabases, func(org string, n int32) dbsqlc.PurgeOrgDatabasesParams {
			return dbsqlc.PurgeOrgDatabasesParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "slack_settings", Delete: execRows(q.PurgeSlackSettings, func(org string, n int32) dbsqlc.PurgeSlackSettingsParams {
			return dbsqlc.PurgeSlackSettingsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "quiet_hours", Delete: execRows(q.PurgeQuietHours, func(org string, n int32) dbsqlc.PurgeQuietHoursParams {
			return dbsqlc.PurgeQuietHoursParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "do_not_contact", Delete: execRows(q.PurgeDoNotContact, func(org string, n int32) dbsqlc.PurgeDoNotContactParams {
			return dbsqlc.PurgeDoNotContactParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "invoke_rate_windows", Delete: execRows(q.PurgeInvokeRateWindows, func(org string, n int32) dbsqlc.PurgeInvokeRateWindowsParams {
			return dbsqlc.PurgeInvokeRateWindowsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "event_listeners", Delete: execRows(q.PurgeEventListeners, func(org string, n int32) dbsqlc.PurgeEventListenersParams {
			return dbsqlc.PurgeEventListenersParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "retention_runs", Delete: execRows(q.PurgeRetentionRuns, func(org string, n int32) dbsqlc.PurgeRetentionRunsParams {
			return dbsqlc.PurgeRetentionRunsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "audit_entries", Delete: execRows(q.PurgeAuditEntries, func(org string, n int32) dbsqlc.PurgeAuditEntriesParams {
			return dbsqlc.PurgeAuditEntriesParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "audit_anchors", Delete: execRows(q.PurgeAuditAnchors, func(org string, n int32) dbsqlc.PurgeAuditAnchorsParams {
			return dbsqlc.PurgeAuditAnchorsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "token_revocations", Delete: execRows(q.PurgeTokenRevocations, func(org string, n int32) dbsqlc.PurgeTokenRevocationsParams {
			return dbsqlc.PurgeTokenRevocationsParams{OrganizationID: org, MaxRows: n}
		})},
		{Name: "org_pauses", Delete: execRows(q.PurgeOrgPauses, func(org string, n int32) dbsqlc.PurgeOrgPausesParams {
			return dbsqlc.PurgeOrgPausesParams{OrganizationID: org, MaxRows: n}
		})},
	}
}

// PurgeCounts counts org's rows in each table of PurgeTables, the rate
// buckets in sourceBuckets being per source.
func (s *Store) PurgeCounts(ctx context.Context, db dbutil.DB, org string, sourceBuckets []string) (map[string]int64, error) {
	c, err := s.q.PurgeCounts(ctx, db, dbsqlc.PurgeCountsParams{OrganizationID: org, SourceBuckets: nonNil(sourceBuckets)})
	if err != nil {
		return nil, fmt.Errorf("counting the organization's rows: %w", err)
	}
	var jobs int64
	if err := db.QueryRow(ctx, riverJobsCountSQL, org).Scan(&jobs); err != nil {
		return nil, fmt.Errorf("counting the organization's River jobs: %w", err)
	}
	return map[string]int64{
		"river_job":            jobs,
		"action_invocations":   c.ActionInvocations,
		"invocation_events":    c.InvocationEvents,
		"slack_messages":       c.SlackMessages,
		"invocation_previews":  c.InvocationPreviews,
		"invocation_approvals": c.InvocationApprovals,
		"invocation_waits":     c.InvocationWaits,
		"grants":               c.Grants,
		"webhook_deliveries":   c.WebhookDeliveries,
		"webhooks":             c.Webhooks,
		"action_modes":         c.ActionModes,
		"approval_policies":    c.ApprovalPolicies,
		"credentials":          c.Credentials,
		"do_not_contact":       c.DoNotContact,
		"event_listeners":      c.EventListeners,
		"invoke_rate_windows":  c.InvokeRateWindows,
		"org_connectors":       c.OrgConnectors,
		"org_databases":        c.OrgDatabases,
		"org_pauses":           c.OrgPauses,
		"quiet_hours":          c.QuietHours,
		"slack_settings":       c.SlackSettings,
		"retention_runs":       c.RetentionRuns,
		"audit_entries":        c.AuditEntries,
		"audit_anchors":        c.AuditAnchors,
		"token_revocations":    c.TokenRevocations,
		"flow_buckets":         c.FlowBuckets,
		"flow_leases":          c.FlowLeases,
	}, nil
}

// nonNil returns names, or an empty list for nil: a nil slice is sent as
// NULL, and "name = ANY(NULL)" is NULL, never false.
func nonNil(names []string) []string {
	if names == nil {
		return []string{}
	}
	return names
}
