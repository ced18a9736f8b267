-- A large organization's state, for measuring the read paths at scale
-- (docs/benchmark.md, "Read paths at scale"). On a new database migrated
-- with `outboxd migrate up`:
--
--   psql -v ON_ERROR_STOP=1 "$URL" -f internal/bench/testdata/readpaths_seed.sql
--
-- org-big: 500,000 invocations over the last 30 days (one in ten needing
-- approval; completed, failed with dead letters some discarded, denied,
-- cancelled, expired, skipped, and the newest pending, approved or
-- executing), their events (about 1.5 million; xids in the past, so a feed
-- resumes over them), approvals, River jobs as River's retention leaves
-- them (completed and cancelled of the last day, discarded of the last
-- week, the open ones, expire jobs of the pending), an audit trail of
-- about 52,000 entries (a decision per approval, discards, config changes)
-- and 20 connectors (unreachable); org-s1 and org-s2: 2,000 invocations each. About
-- 2.5 minutes on two cores. Then serve it (`outboxd serve --role api`) and
-- time the endpoints with a user token of org-big
-- (`outboxd token --kind user --role owner --org org-big`).
SET synchronous_commit = off;
-- invocations: org-big 500k over 30 days; org-s1, org-s2 2k each.
CREATE TEMP TABLE orgs(org text, n int);
INSERT INTO orgs VALUES ('org-big', 500000), ('org-s1', 2000), ('org-s2', 2000);

CREATE TEMP TABLE seedinv AS
SELECT o.org, i, o.n,
       gen_random_uuid() AS id,
       now() - interval '30 days' * (1 - i::float8 / o.n) AS created_at,
       (hashint4(i) & 1023) % 1000 AS r,
       i % 10 = 0 AS needs_approval
FROM orgs o, generate_series(1, o.n) AS i;

INSERT INTO action_invocations (id, organization_id, session_id, automation_id, user_id, requested_by, origin,
    integration, action, risk_level, mode, mode_source, params, params_hash, status, result, error, denied_reason,
    duration_ms, approved_by, approved_at, started_at, completed_at, expires_at, created_at, updated_at,
    external_id, idempotency_key, job_id, attempt, rate_bucket, approval, dead_lettered_at, discarded_at, discarded_by, event_seq)
SELECT id, org,
    CASE WHEN origin <> 'envelope' THEN 'sess-' || (i / 25) END,
    CASE WHEN origin = 'envelope' THEN 'auto-' || (i % 50) END,
    'user-' || (i % 40),
    CASE WHEN origin = 'envelope' THEN 'automation:auto-' || (i % 50) ELSE 'agent:sess-' || (i / 25) END,
    origin, integration, 'send_message', 'write',
    CASE WHEN needs_approval THEN 'require_approval' ELSE 'allow' END, 'default',
    jsonb_build_object('channel', '#c' || (i % 30), 'text', repeat('hello world ', 8) || i), md5(i::text),
    status,
    CASE WHEN status = 'completed' THEN jsonb_build_object('ok', true, 'ts', i::text) END,
    CASE WHEN status = 'failed' THEN 'provider returned 500' END,
    CASE WHEN status = 'denied' THEN 'denied by policy' END,
    CASE WHEN status IN ('completed', 'failed') THEN 120 END,
    CASE WHEN needs_approval AND status NOT IN ('pending', 'denied', 'expired') THEN 'user-approver' END,
    CASE WHEN needs_approval AND status NOT IN ('pending', 'denied', 'expired') THEN created_at + interval '5 minutes' END,
    CASE WHEN status IN ('completed', 'failed', 'executing') THEN created_at + interval '6 minutes' END,
    CASE WHEN status NOT IN ('pending', 'approved', 'executing') THEN created_at + interval '7 minutes' END,
    CASE WHEN needs_approval THEN created_at + interval '1 day' END,
    created_at, created_at + interval '7 minutes',
    CASE WHEN origin = 'envelope' THEN 'ext-' || i END,
    CASE WHEN origin <> 'envelope' THEN 'idem-' || i END,
    NULL, CASE WHEN status IN ('completed', 'failed', 'executing') THEN 1 ELSE 0 END,
    integration || '.minute',
    CASE WHEN needs_approval THEN 'required' ELSE 'auto' END,
    CASE WHEN status = 'failed' AND r < 820 THEN created_at + interval '7 minutes' END,
    CASE WHEN status = 'failed' AND r < 805 THEN created_at + interval '1 hour' END,
    CASE WHEN status = 'failed' AND r < 805 THEN 'user-admin' END,
    CASE WHEN status IN ('completed', 'failed') THEN 3 + needs_approval::int ELSE 2 END
FROM (
  SELECT s.*,
    CASE WHEN i % 10 < 5 THEN 'invoke' WHEN i % 10 < 9 THEN 'envelope' ELSE 'mcp' END AS origin,
    CASE WHEN i % 20 < 10 THEN 'slack' WHEN i % 20 < 15 THEN 'github' WHEN i % 20 < 18 THEN 'linear' ELSE 'jira' END AS integration,
    CASE
      WHEN needs_approval AND i > n - n / 25 AND r % 4 = 0 THEN 'pending'
      WHEN i > n - n / 1000 AND r % 7 = 0 THEN 'approved'
      WHEN i > n - n / 2500 AND r % 13 = 0 THEN 'executing'
      WHEN r < 830 AND r >= 800 THEN 'failed'
      WHEN r >= 830 AND r < 870 THEN 'denied'
      WHEN r >= 870 AND r < 890 THEN 'cancelled'
      WHEN r >= 890 AND r < 900 AND needs_approval THEN 'expired'
      WHEN r >= 900 AND r < 910 THEN 'skipped'
      ELSE 'completed' END AS status
  FROM seedinv s
) x;
ANALYZE action_invocations;
SELECT organization_id, status, count(*) FROM action_invocations GROUP BY 1,2 ORDER BY 1,2;
SELECT count(*) AS dead_letters FROM action_invocations WHERE dead_lettered_at IS NOT NULL AND discarded_at IS NULL;

-- events: created, approved (if approved), started, final.
INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason, created_at, xid)
SELECT a.id, a.organization_id, e.seq, e.type, e.from_status, e.to_status, e.actor, NULL, e.at,
       (3 + floor(extract(epoch FROM e.at - (now() - interval '30 days')) / (30 * 86400) * 700))::bigint::text::xid8
FROM action_invocations a
CROSS JOIN LATERAL (
  SELECT 1 AS seq, 'created' AS type, NULL::text AS from_status,
         CASE WHEN a.approval = 'required' THEN 'pending' WHEN a.status = 'denied' THEN 'denied' ELSE 'approved' END AS to_status,
         a.requested_by AS actor, a.created_at AS at
  UNION ALL
  SELECT 2, CASE WHEN a.status = 'expired' THEN 'expired' WHEN a.status = 'denied' THEN 'denied' ELSE 'approved' END,
         'pending', CASE WHEN a.status IN ('expired', 'denied') THEN a.status ELSE 'approved' END, a.approved_by, a.created_at + interval '5 minutes'
  WHERE a.approval = 'required' AND a.status <> 'pending'
  UNION ALL
  SELECT 2 + (a.approval = 'required')::int, 'started', 'approved', 'executing', NULL, a.started_at
  WHERE a.started_at IS NOT NULL
  UNION ALL
  SELECT 3 + (a.approval = 'required')::int, a.status, 'executing', a.status, NULL, a.completed_at
  WHERE a.status IN ('completed', 'failed')
  UNION ALL
  SELECT 2 + (a.approval = 'required')::int, a.status, 'approved', a.status, 'user-x', a.completed_at
  WHERE a.status IN ('cancelled', 'skipped')
) e;
UPDATE action_invocations a SET event_seq = m.s FROM (SELECT invocation_id, max(seq) s FROM invocation_events GROUP BY 1) m WHERE m.invocation_id = a.id AND a.event_seq <> m.s;

-- approvals
INSERT INTO invocation_approvals (organization_id, invocation_id, approver, decided_at, intent_digest)
SELECT organization_id, id, approved_by, approved_at, '' FROM action_invocations WHERE approved_by IS NOT NULL;

-- river jobs: completed (last 24h), discarded (dead letters, 7d), cancelled (24h), pending/available/running for open ones, expire jobs for pending
INSERT INTO river_job (state, attempt, max_attempts, attempted_at, created_at, finalized_at, scheduled_at, args, kind, queue, attempted_by)
SELECT st::river_job_state,
       CASE WHEN st IN ('completed', 'discarded', 'running') THEN 1 ELSE 0 END, 25,
       a.started_at, a.created_at,
       CASE WHEN st IN ('completed', 'discarded', 'cancelled') THEN a.completed_at END,
       a.created_at,
       jsonb_build_object('invocation_id', a.id, 'bucket', jsonb_build_object('name', a.rate_bucket, 'org', a.organization_id, 'source', a.integration)),
       'execute_action', 'actions', CASE WHEN a.started_at IS NOT NULL THEN ARRAY['w1'] END
FROM (
  SELECT a.*, CASE a.status WHEN 'completed' THEN 'completed' WHEN 'failed' THEN 'discarded' WHEN 'cancelled' THEN 'cancelled'
             WHEN 'skipped' THEN 'completed' WHEN 'pending' THEN 'pending' WHEN 'approved' THEN 'available' WHEN 'executing' THEN 'running' END AS st
  FROM action_invocations a
) a
WHERE st IS NOT NULL AND (
  (st IN ('completed', 'cancelled') AND a.completed_at > now() - interval '24 hours')
  OR (st = 'discarded' AND a.completed_at > now() - interval '7 days')
  OR st IN ('pending', 'available', 'running'));
UPDATE action_invocations a SET job_id = j.id FROM river_job j WHERE j.kind = 'execute_action' AND (j.args->>'invocation_id')::uuid = a.id;
INSERT INTO river_job (state, attempt, max_attempts, created_at, scheduled_at, args, kind, queue)
SELECT 'scheduled', 0, 25, a.created_at, a.expires_at, jsonb_build_object('invocation_id', a.id, 'organization_id', a.organization_id),
       'expire_invocation', 'maintenance'
FROM action_invocations a WHERE a.status = 'pending';
INSERT INTO river_queue (name, created_at, metadata, updated_at) VALUES ('actions', now(), '{}', now()), ('maintenance', now(), '{}', now()) ON CONFLICT DO NOTHING;

-- audit: an approve/deny per decided invocation, dead-letter discards, and config changes
INSERT INTO audit_entries (organization_id, seq, occurred_at, actor_subject, actor_kind, actor_role, client_addr, action, target_type, target_id, before_state, after_state, prev_hash, hash)
SELECT organization_id, row_number() OVER (PARTITION BY organization_id ORDER BY at, tid), at, actor, 'user', 'admin', '10.0.0.1', action, ttype, tid,
       '{"status":"pending"}', '{"status":"approved"}', md5(tid || 'p'), md5(tid)
FROM (
  SELECT organization_id, approved_at AS at, approved_by AS actor, 'invocation.approve' AS action, 'invocation' AS ttype, id::text AS tid
  FROM action_invocations WHERE approved_by IS NOT NULL
  UNION ALL
  SELECT organization_id, completed_at, 'user-approver', 'invocation.deny', 'invocation', id::text FROM action_invocations WHERE approval = 'required' AND status = 'denied'
  UNION ALL
  SELECT organization_id, discarded_at, discarded_by, 'dead_letter.discard', 'invocation', id::text FROM action_invocations WHERE discarded_at IS NOT NULL
  UNION ALL
  SELECT o.org, now() - interval '30 days' * random(), 'user-' || (g % 5), (ARRAY['connector.update', 'action_modes.replace', 'webhook.create', 'credential.store'])[1 + g % 4],
         (ARRAY['connector', 'action_modes', 'webhook', 'credential'])[1 + g % 4], 'target-' || (g % 7)
  FROM orgs o, generate_series(1, 300) g
) x;

-- connectors (their URLs do not resolve: GET /v1/actions/available waits on them)
INSERT INTO org_connectors (organization_id, name, url, auth_type, risk_policy, enabled, created_by)
SELECT o.org, 'conn-' || g, 'https://example.test/mcp/' || g, 'none', '{"default":"write"}', true, 'user-1' FROM orgs o, generate_series(1, 20) g;
VACUUM ANALYZE;
