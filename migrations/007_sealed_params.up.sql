-- The exact params of an invocation whose stored params were redacted,
-- sealed with secrets.key (AES-256-GCM, bound to the invocation id). The
-- worker executes these; the API shows only the redacted params. Erased
-- when the invocation is finished (a dead letter keeps them for a replay
-- until it is discarded).
ALTER TABLE action_invocations ADD COLUMN params_sealed bytea;
