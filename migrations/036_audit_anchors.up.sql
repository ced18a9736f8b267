-- Where each organization's audit chain starts once retention has deleted
-- its oldest entries (internal/domain/audit, retention.audit_entries).
-- Entries are deleted from the front of the chain only, and the anchor is
-- written in the same transaction: pruned_through is the seq of the newest
-- entry deleted (the first kept is pruned_through + 1) and prev_hash its
-- hash, which the first kept entry names as its prev_hash. An export
-- starts with the anchor, and `outboxd audit verify` checks the chain from
-- it. pruned_before is the cut-off the entries were older than.
CREATE TABLE audit_anchors (
    organization_id text        PRIMARY KEY,
    pruned_through  bigint      NOT NULL CHECK (pruned_through > 0),
    prev_hash       text        NOT NULL,
    pruned_before   timestamptz NOT NULL,
    pruned_at       timestamptz NOT NULL,
    pruned_total    bigint      NOT NULL
);
ALTER TABLE audit_anchors ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON audit_anchors
    USING (organization_id = current_setting('outboxd.org', true));

-- The API role reads anchors; only retention (the owner) writes them.
DO $$
BEGIN
    EXECUTE format('REVOKE INSERT, UPDATE, DELETE ON %I.audit_anchors FROM outboxd_tenant', current_schema());
END
$$;
