-- How a stored token is presented (api_key as is, oauth as Bearer; '' means
-- the provider's usual form), and the user an invocation acts for, so a
-- user-scoped credential can be preferred over the org's.
ALTER TABLE credentials ADD COLUMN token_kind text NOT NULL DEFAULT ''
    CHECK (token_kind IN ('', 'api_key', 'oauth'));
ALTER TABLE action_invocations ADD COLUMN user_id text;
