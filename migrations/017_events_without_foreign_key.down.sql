ALTER TABLE invocation_events ADD CONSTRAINT invocation_events_invocation_id_fkey
    FOREIGN KEY (invocation_id) REFERENCES action_invocations (id) ON DELETE CASCADE;
