-- The sources an audit entry concerns (internal/domain/audit), so that a
-- token with a sources claim lists the entries of its sources only: an
-- entry is listed to such a token when it names at least one source and
-- every one of them is in the claim. An entry of the whole organization
-- (tokens, revocations, settings, webhooks, pauses, approval policy, key
-- rotation, retention) names none and is listed to tokens without a claim
-- only. The column is not part of the hashed content (Canonical, the
-- chain's v1 encoding): existing chains verify as before, and an export
-- does not carry it. The API role cannot update it (migration 029).
ALTER TABLE audit_entries ADD COLUMN sources text[] NOT NULL DEFAULT '{}';

-- The entries written before: their sources where the stored columns name
-- them, in one pass: a decision's source_id; a credential's integration
-- (its target before any "/<user>"); a connector's or a database's source
-- id, from its id (or the source id a path gave); a grant's integration,
-- or its row's source; the keys of action modes, before and after; the
-- dead letters' invocations' sources. Those that name none (a grant
-- revoked with a credential or by drift, whose row retention deleted; a
-- dead letter whose invocation retention deleted) stay the
-- organization's, listed to tokens without a claim only.
UPDATE audit_entries e SET sources = coalesce(CASE e.target_type
    WHEN 'invocation' THEN array_remove(ARRAY[e.after_state::jsonb ->> 'source_id'], NULL)
    WHEN 'credential' THEN ARRAY[split_part(e.target_id, '/', 1)]
    WHEN 'connector' THEN ARRAY[CASE WHEN e.target_id LIKE 'connector:%' THEN e.target_id ELSE 'connector:' || e.target_id END]
    WHEN 'database' THEN ARRAY[CASE WHEN e.target_id LIKE 'database:%' THEN e.target_id ELSE 'database:' || e.target_id END]
    WHEN 'grant' THEN array_remove(ARRAY[coalesce(e.after_state::jsonb ->> 'integration', e.before_state::jsonb ->> 'integration',
        (SELECT g.source_id FROM grants g
         WHERE g.organization_id = e.organization_id AND g.id = (CASE WHEN e.target_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN e.target_id::uuid END)))], NULL)
    WHEN 'action_modes' THEN (
        SELECT array_agg(DISTINCT regexp_replace(k.key, ':[^:]*$', '') ORDER BY regexp_replace(k.key, ':[^:]*$', ''))
        FROM (SELECT s::jsonb AS v FROM unnest(ARRAY[e.before_state, e.after_state]) AS s) AS states,
             LATERAL jsonb_object_keys(CASE WHEN jsonb_typeof(states.v) = 'object' THEN states.v ELSE '{}' END) AS k(key)
        WHERE strpos(k.key, ':') > 1)
    WHEN 'dead_letters' THEN (
        SELECT array_agg(DISTINCT i.integration ORDER BY i.integration) FROM action_invocations i
        WHERE i.organization_id = e.organization_id AND i.id IN (
            SELECT CASE WHEN x ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN x::uuid END
            FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(e.after_state::jsonb -> 'ids') = 'array'
                THEN e.after_state::jsonb -> 'ids' ELSE '[]' END) AS x))
    END, '{}')
WHERE e.target_type IN ('invocation', 'credential', 'connector', 'database', 'grant', 'action_modes', 'dead_letters');

-- A token narrowed to a source with few entries (a connector's, a
-- database's) lists them through this index rather than reading the
-- organization's whole trail for a page (1,000,000 entries in ten
-- organizations: a sequential scan of 570 ms without it, 45 ms with it);
-- one of a source with many entries reads the trail newest first, as
-- without a claim.
CREATE INDEX audit_entries_sources ON audit_entries USING gin (sources);
