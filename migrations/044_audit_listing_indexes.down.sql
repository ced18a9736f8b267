DROP INDEX audit_entries_org_actor;
DROP INDEX audit_entries_org_target;
