-- Grants (internal/domain/grant): a human's approval of the next few
-- invocations like one they approved, narrower than an "always allow"
-- override. A grant lets through at most remaining more invocations of
-- one action, in one session or automation (scope, scope_id), whose
-- params hold the values of fixed (a JSON object of top-level param name
-- to exact value, taken from the approved invocation's stored params and
-- never a secret), until expires_at, while the action's definition hash
-- is still definition_hash. It ends when its count or time runs out, or
-- when revoked: by a person, or by outboxd when the action's definition
-- drifts or the source's credential is replaced or deleted
-- (revoke_reason 'manual', 'drift' or 'credential').
CREATE TABLE grants (
    id                  uuid        PRIMARY KEY,
    organization_id     text        NOT NULL,
    scope               text        NOT NULL CHECK (scope IN ('session', 'automation')),
    scope_id            text        NOT NULL,
    source_id           text        NOT NULL,
    action_id           text        NOT NULL,
    fixed               jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(fixed) = 'object'),
    granted             integer     NOT NULL CHECK (granted > 0),
    remaining           integer     NOT NULL CHECK (remaining >= 0),
    expires_at          timestamptz NOT NULL,
    definition_hash     text        NOT NULL,
    created_by          text        NOT NULL,
    created_from        uuid        NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    revoked_at          timestamptz,
    revoked_by          text,
    revoke_reason       text CHECK (revoke_reason IN ('manual', 'drift', 'credential'))
);
-- The live grants of an action in a scope: what a submission looks up.
CREATE INDEX grants_live ON grants (organization_id, source_id, action_id, scope, scope_id)
    WHERE revoked_at IS NULL AND remaining > 0;
CREATE INDEX grants_org ON grants (organization_id, created_at);
CREATE UNIQUE INDEX grants_created_from ON grants (organization_id, created_from);
ALTER TABLE grants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON grants
    USING (organization_id = current_setting('outboxd.org', true));

-- The grant that let an invocation through without a human (mode_source
-- 'grant'); NULL for every other invocation.
ALTER TABLE action_invocations ADD COLUMN grant_id uuid;
