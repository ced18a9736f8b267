-- An invoke's Idempotency-Key belongs to its session: another session of
-- the organization may use the same key for its own request, and learns
-- nothing from doing so. Only invokes carry a key, and every invoke has a
-- session. Envelopes keep their external id per organization.
DROP INDEX action_invocations_org_idempotency_key;
CREATE UNIQUE INDEX action_invocations_session_idempotency_key
    ON action_invocations (organization_id, session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
