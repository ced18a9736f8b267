-- Deadlines stored before the API refused them (after year 9999 in UTC)
-- cannot be answered in JSON (RFC 3339 has four-digit years), so every
-- listing of the organization that held one failed. Such a deadline is
-- never reached: it becomes the latest the API accepts, so the row still
-- says it had one.
UPDATE action_invocations
SET must_run_before = '9999-12-31 23:59:59.999999+00'
WHERE must_run_before >= '10000-01-01 00:00:00+00';
