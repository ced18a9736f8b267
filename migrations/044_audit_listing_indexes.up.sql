-- GET /v1/audit filters an organization's trail by target and by actor,
-- newest first. Most entries are decisions on invocations, so the history
-- of a connector, a webhook or a credential, or one person's changes,
-- read nearly every entry of the organization to fill a page (50,000
-- entries: 20-40 ms, growing with the trail). With these indexes such a
-- page reads the entries it lists. The trail is written once per
-- administrative change or decision, not on the invocations' path.
CREATE INDEX audit_entries_org_target ON audit_entries (organization_id, target_type, target_id, seq);
CREATE INDEX audit_entries_org_actor ON audit_entries (organization_id, actor_subject, seq);
