ALTER TABLE action_invocations DROP COLUMN grant_id;
DROP TABLE grants;
