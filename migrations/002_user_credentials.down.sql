ALTER TABLE action_invocations DROP COLUMN user_id;
ALTER TABLE credentials DROP COLUMN token_kind;
