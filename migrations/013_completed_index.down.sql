DROP INDEX IF EXISTS action_invocations_org_completed;
