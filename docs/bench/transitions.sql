-- An invocation's three transitions as outboxd makes them, 50 to a group
-- (docs/bench/transitions.sh): the insert with its created event, the
-- begin with the gate settings and its started event, the completion with
-- its completed event. Each statement is one transaction, as in the worker.
-- Keep in step with InvocationInsertMany, InvocationBeginMany and
-- InvocationCompleteMany in internal/dbsqlc/queries/invocation.sql.
\set g random(1, 2000000000)
WITH k AS (SELECT md5((:g)::bigint::text || '-' || n)::uuid AS id, n FROM generate_series(1, 50) n),
next AS (
    INSERT INTO action_invocations (id, job_id, organization_id, requested_by, origin, integration, action,
        risk_level, mode, mode_source, params, params_hash, status, external_id, rate_bucket, approval, event_seq)
    SELECT k.id, (:g)::bigint * 100 + n, 'bench-org', 'svc-bench', 'envelope', 'slack', 'send_message',
        'medium', 'allow', 'override', '{"channel": "C1", "text": "bench message"}'::jsonb, md5(k.id::text),
        'approved', 'batch-' || (:g)::bigint::text || '-' || n, 'slack.minute', 'auto', 1
    FROM k
    ON CONFLICT DO NOTHING
    RETURNING *
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, to_status, actor, reason)
    SELECT next.id, next.organization_id, 1, 'created', next.status, next.requested_by, next.denied_reason FROM next
)
SELECT count(*) FROM next;
WITH k AS (SELECT md5((:g)::bigint::text || '-' || n)::uuid AS id, 1 AS attempt FROM generate_series(1, 50) n),
prev AS (
    SELECT a.id, a.status, a.started_at, a.organization_id, a.must_run_before, k.attempt,
        coalesce((SELECT array_agg(d.pattern ORDER BY d.pattern) FROM do_not_contact d
                  WHERE d.organization_id = a.organization_id), '{}')::text[] AS patterns,
        coalesce((SELECT jsonb_agg(jsonb_build_object('time_zone', q.time_zone, 'start', q.start_minute, 'end', q.end_minute))
                  FROM quiet_hours q
                  WHERE q.organization_id = a.organization_id AND (q.bucket = '' OR q.bucket = coalesce(a.rate_bucket, ''))), '[]')::jsonb AS windows,
        coalesce((SELECT max(c.updated_at) FROM credentials c
                  WHERE c.organization_id = a.organization_id AND c.integration = a.integration
                    AND (c.user_id = '' OR c.user_id = coalesce(a.user_id, ''))), 'epoch')::timestamptz AS credential_version
    FROM k JOIN action_invocations AS a ON a.id = k.id
    ORDER BY a.id FOR UPDATE OF a
), go AS (
    SELECT prev.*, (prev.status IN ('approved', 'executing') AND cardinality(prev.patterns) = 0
        AND prev.windows = '[]'::jsonb AND (prev.must_run_before IS NULL OR prev.must_run_before > now()))::bool AS start
    FROM prev
), next AS (
    UPDATE action_invocations AS i
    SET status = 'executing', attempt = go.attempt, started_at = coalesce(i.started_at, now()), updated_at = now(),
        event_seq = i.event_seq + 1
    FROM go WHERE i.id = go.id AND go.start
    RETURNING i.id, i.organization_id, i.status, i.attempt, i.event_seq, go.status AS from_status
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'started', next.from_status, next.status, NULL, 'attempt ' || next.attempt
    FROM next
)
SELECT count(*) FROM go JOIN action_invocations i ON i.id = go.id;
WITH prev AS (
    SELECT a.id, a.status, '{"ok": true, "channel": "C1", "ts": "1503435956.000247"}'::jsonb AS result,
        'C1/1503435956.000247' AS provider_ref, false AS conflict, NULL::jsonb AS steps, 3 AS duration_ms
    FROM (SELECT md5((:g)::bigint::text || '-' || n)::uuid AS id FROM generate_series(1, 50) n) u
    JOIN action_invocations AS a ON a.id = u.id
    ORDER BY a.id FOR UPDATE OF a
), next AS (
    UPDATE action_invocations AS i
    SET status = 'completed', result = prev.result, provider_ref = prev.provider_ref, conflict = prev.conflict,
        steps = prev.steps, error = NULL, duration_ms = prev.duration_ms, completed_at = now(), params_sealed = NULL,
        updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status = 'executing'
    RETURNING i.id, i.organization_id, i.event_seq, i.status, prev.status AS from_status
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'completed', next.from_status, next.status, NULL, NULL FROM next
)
SELECT count(*) FROM next;
