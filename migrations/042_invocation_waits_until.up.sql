-- A wait lasts at most the API's sync_wait, so each row now says until
-- when its call can still be waiting (Postgres's clock, like the check
-- that reads it). A withdrawal counts only the rows whose time has not
-- passed: a process that died while a call waited no longer keeps the
-- invocation from being withdrawn once that call would have ended anyway.
-- Rows written before this migration (no time) last an hour.
ALTER TABLE invocation_waits
    ADD COLUMN until timestamptz NOT NULL DEFAULT now() + interval '1 hour';
ALTER TABLE invocation_waits ALTER COLUMN until DROP DEFAULT;
