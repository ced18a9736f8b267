-- The organization of each concurrency lease of a global bucket, as
-- {"<holder>": "<organization id>"}, so that the statement granting leases
-- holds one organization to its share of the bucket's slots (flow's
-- MaxOrgShare) and one whose calls hang cannot take every slot. Entries
-- live as long as their leases in the same row; a lease without one (taken
-- by a release before this one) counts against the bucket only. Rows of
-- buckets kept per organization or source keep it empty.
ALTER TABLE flow_buckets ADD COLUMN lease_orgs jsonb NOT NULL DEFAULT '{}';
