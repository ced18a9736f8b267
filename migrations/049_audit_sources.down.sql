DROP INDEX audit_entries_sources;
ALTER TABLE audit_entries DROP COLUMN sources;
