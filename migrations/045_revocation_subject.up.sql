-- A revocation by subject refuses an organization's tokens issued before
-- its cut-off whose verified claims carry that subject (sub, or the claim
-- auth.idp.claims.subject names): one person's user tokens and console
-- sessions, so that offboarding someone does not revoke the whole
-- organization. Like a revocation by session or automation, its cut-off
-- is the revocation's time rounded up to the second, and it expires
-- auth.max_lifetime after it. At most one selector per revocation.
ALTER TABLE token_revocations ADD COLUMN subject text;
ALTER TABLE token_revocations DROP CONSTRAINT token_revocations_check;
ALTER TABLE token_revocations ADD CONSTRAINT token_revocations_check
    CHECK (num_nonnulls(jti, session_id, automation_id, subject) <= 1);
