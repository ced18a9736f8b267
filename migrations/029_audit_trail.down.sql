DROP TABLE audit_entries;
