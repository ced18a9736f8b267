-- An event names its invocation by id without a foreign key. The store
-- writes an event only in the statement that inserts or changes that
-- invocation, holding its row, and invocations are never deleted, so the
-- key checked nothing the store does not already ensure. Checking it cost
-- a trigger, a lookup and a key-share lock on the invocation for every
-- event, three per action: measured with outboxd bench, a quarter of
-- Postgres's CPU, and the single-envelope path ran 1.5 times as fast
-- without it.
ALTER TABLE invocation_events DROP CONSTRAINT invocation_events_invocation_id_fkey;
