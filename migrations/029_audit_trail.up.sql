-- The audit trail: one row per administrative change of an organization
-- (internal/domain/audit). Each organization's entries form a hash chain:
-- seq counts from 1 without gaps, prev_hash is the previous entry's hash
-- ('' for the first) and hash is SHA-256 over a canonical encoding of the
-- entry's fields with prev_hash, so an entry deleted, altered or moved is
-- detectable (`outboxd audit verify` on an export). before_state and
-- after_state are canonical JSON text, never a secret.
CREATE TABLE audit_entries (
    organization_id text        NOT NULL,
    seq             bigint      NOT NULL CHECK (seq > 0),
    occurred_at     timestamptz NOT NULL,
    actor_subject   text        NOT NULL,
    actor_kind      text        NOT NULL,
    actor_role      text        NOT NULL DEFAULT '',
    client_addr     text        NOT NULL DEFAULT '',
    action          text        NOT NULL,
    target_type     text        NOT NULL,
    target_id       text        NOT NULL DEFAULT '',
    before_state    text        NOT NULL,
    after_state     text        NOT NULL,
    prev_hash       text        NOT NULL,
    hash            text        NOT NULL,
    PRIMARY KEY (organization_id, seq)
);
CREATE INDEX audit_entries_org_time ON audit_entries (organization_id, occurred_at);

ALTER TABLE audit_entries ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON audit_entries
    USING (organization_id = current_setting('outboxd.org', true));

-- The API role appends and reads; it never rewrites the trail.
DO $$
BEGIN
    EXECUTE format('REVOKE UPDATE, DELETE ON %I.audit_entries FROM outboxd_tenant', current_schema());
END
$$;
