-- Without the subject column a revocation by subject would read as one of
-- every token of its organization: they are dropped instead, and the
-- people they revoked are let in again (revoke them again by jti, session
-- or issued_before after going back).
DELETE FROM token_revocations WHERE subject IS NOT NULL;
ALTER TABLE token_revocations DROP CONSTRAINT token_revocations_check;
ALTER TABLE token_revocations ADD CONSTRAINT token_revocations_check
    CHECK (num_nonnulls(jti, session_id, automation_id) <= 1);
ALTER TABLE token_revocations DROP COLUMN subject;
