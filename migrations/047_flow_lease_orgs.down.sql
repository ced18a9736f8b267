-- Leases are counted against the bucket only again.
ALTER TABLE flow_buckets DROP COLUMN lease_orgs;
