-- A grant is also revoked when the person who made it has their tokens
-- revoked by subject (revoke_reason 'offboarded'). Grants are few (one
-- per approval that asked for one), so checking them again under the
-- table's lock is brief.
ALTER TABLE grants DROP CONSTRAINT grants_revoke_reason_check;
ALTER TABLE grants ADD CONSTRAINT grants_revoke_reason_check
    CHECK (revoke_reason IN ('manual', 'drift', 'credential', 'offboarded'));
