-- The token that asked for an invocation: its jti and iat (issued-at), so
-- that a revocation withdraws exactly what the tokens it refuses asked for
-- (a revocation by jti its token's, one with issued_before those of tokens
-- issued before its cut-off). NULL when the token had none (an identity
-- provider's may lack them), when no token asked, and on the rows written
-- before this migration: those are matched by created_at instead.
ALTER TABLE action_invocations ADD COLUMN token_jti text, ADD COLUMN token_issued_at timestamptz;

-- The revocations of one token, looked up in every transaction that
-- records invocations (the revocations in effect that refuse the token
-- that asked): one index per selector, and the organization-wide ones
-- (no selector) apart, so that an organization with many revocations of
-- finished sessions is not read through on every invoke.
CREATE INDEX token_revocations_jti ON token_revocations (organization_id, jti) WHERE jti IS NOT NULL;
CREATE INDEX token_revocations_session ON token_revocations (organization_id, session_id) WHERE session_id IS NOT NULL;
CREATE INDEX token_revocations_automation ON token_revocations (organization_id, automation_id) WHERE automation_id IS NOT NULL;
CREATE INDEX token_revocations_subject ON token_revocations (organization_id, subject) WHERE subject IS NOT NULL;
CREATE INDEX token_revocations_org_wide ON token_revocations (organization_id)
    WHERE jti IS NULL AND session_id IS NULL AND automation_id IS NULL AND subject IS NULL;
