-- The same three transitions on the least a timeline needs: a six-column
-- invocation table and an event table, each with only its primary key
-- (created by docs/bench/transitions.sh).
\set g random(1, 2000000000)
WITH k AS (SELECT md5((:g)::bigint::text || '-' || n)::uuid AS id FROM generate_series(1, 50) n),
ins AS (
    INSERT INTO minimal_invocations (id, organization_id, status, event_seq)
    SELECT id, 'bench-org', 'approved', 1 FROM k
    ON CONFLICT DO NOTHING
    RETURNING id
)
INSERT INTO minimal_events (invocation_id, seq, type, to_status) SELECT id, 1, 'created', 'approved' FROM ins;
WITH k AS (SELECT md5((:g)::bigint::text || '-' || n)::uuid AS id FROM generate_series(1, 50) n),
up AS (
    UPDATE minimal_invocations i SET status = 'executing', event_seq = event_seq + 1, updated_at = now()
    FROM k WHERE i.id = k.id
    RETURNING i.id, i.event_seq
)
INSERT INTO minimal_events (invocation_id, seq, type, to_status) SELECT id, event_seq, 'started', 'executing' FROM up;
WITH k AS (SELECT md5((:g)::bigint::text || '-' || n)::uuid AS id FROM generate_series(1, 50) n),
up AS (
    UPDATE minimal_invocations i SET status = 'completed', event_seq = event_seq + 1, updated_at = now()
    FROM k WHERE i.id = k.id
    RETURNING i.id, i.event_seq
)
INSERT INTO minimal_events (invocation_id, seq, type, to_status) SELECT id, event_seq, 'completed', 'completed' FROM up;
