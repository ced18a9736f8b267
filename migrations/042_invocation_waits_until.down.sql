ALTER TABLE invocation_waits DROP COLUMN until;
