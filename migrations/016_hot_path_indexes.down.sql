CREATE INDEX invocation_events_org_id ON invocation_events (organization_id, id);
DROP INDEX action_invocations_org_in_flight;
DROP INDEX action_invocations_pending_expires;
CREATE INDEX action_invocations_status_expires ON action_invocations (status, expires_at);
DROP INDEX action_invocations_session_status;
CREATE INDEX action_invocations_session_status ON action_invocations (session_id, status);
