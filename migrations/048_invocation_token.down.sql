-- Invocations no longer record their token: revocations match them by
-- created_at again.
DROP INDEX token_revocations_org_wide;
DROP INDEX token_revocations_subject;
DROP INDEX token_revocations_automation;
DROP INDEX token_revocations_session;
DROP INDEX token_revocations_jti;
ALTER TABLE action_invocations DROP COLUMN token_issued_at, DROP COLUMN token_jti;
