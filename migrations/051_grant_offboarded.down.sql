-- The grants revoked by offboarding count as revoked by hand.
UPDATE grants SET revoke_reason = 'manual' WHERE revoke_reason = 'offboarded';
ALTER TABLE grants DROP CONSTRAINT grants_revoke_reason_check;
ALTER TABLE grants ADD CONSTRAINT grants_revoke_reason_check
    CHECK (revoke_reason IN ('manual', 'drift', 'credential'));
