-- How many times a provider asked an invocation to wait (429 Retry-After).
-- Past worker.max_provider_waits the next one spends an attempt, so a
-- provider that never stops refusing cannot keep a job alive forever.
ALTER TABLE action_invocations ADD COLUMN provider_waits integer NOT NULL DEFAULT 0;
