-- Invocations: one row per requested action, from the invoke API or an envelope.
CREATE TABLE action_invocations (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id  text        NOT NULL,
    session_id       text,
    automation_id    text,
    requested_by     text        NOT NULL,
    origin           text        NOT NULL CHECK (origin IN ('invoke', 'envelope')),
    integration      text        NOT NULL,
    action           text        NOT NULL,
    risk_level       text        NOT NULL,
    mode             text        NOT NULL CHECK (mode IN ('allow', 'deny', 'require_approval')),
    mode_source      text        NOT NULL,
    params           jsonb       NOT NULL,
    params_hash      text        NOT NULL,
    status           text        NOT NULL CHECK (status IN ('pending', 'approved', 'executing', 'completed',
                                                        'denied', 'failed', 'expired', 'skipped', 'cancelled')),
    result           jsonb,
    error            text,
    denied_reason    text,
    duration_ms      integer,
    approved_by      text,
    approved_at      timestamptz,
    started_at       timestamptz,
    completed_at     timestamptz,
    expires_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    external_id      text,
    idempotency_key  text,
    job_id           bigint,
    attempt          integer     NOT NULL DEFAULT 0,
    rate_bucket      text,
    must_run_before  timestamptz,
    provider_ref     text,
    conflict         boolean     NOT NULL DEFAULT false,
    approval         text        NOT NULL DEFAULT 'auto' CHECK (approval IN ('auto', 'required')),
    risk_hint        text
);

CREATE INDEX action_invocations_session_status ON action_invocations (session_id, status);
CREATE INDEX action_invocations_status_expires ON action_invocations (status, expires_at);
CREATE INDEX action_invocations_org_created ON action_invocations (organization_id, created_at DESC);
CREATE UNIQUE INDEX action_invocations_org_external_id ON action_invocations (organization_id, external_id)
    WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX action_invocations_org_idempotency_key ON action_invocations (organization_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Mode overrides at org scope (scope_id = organization id) or automation scope.
CREATE TABLE action_modes (
    organization_id text        NOT NULL,
    scope           text        NOT NULL CHECK (scope IN ('org', 'automation')),
    scope_id        text        NOT NULL,
    source_id       text        NOT NULL,
    action_id       text        NOT NULL,
    mode            text        NOT NULL CHECK (mode IN ('allow', 'deny', 'require_approval')),
    updated_by      text        NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, scope, scope_id, source_id, action_id)
);

-- Provider credentials, sealed with AES-256-GCM. user_id is '' for the org's
-- own credential.
CREATE TABLE credentials (
    organization_id text        NOT NULL,
    integration     text        NOT NULL,
    user_id         text        NOT NULL DEFAULT '',
    sealed          bytea       NOT NULL,
    created_by      text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, integration, user_id)
);

-- Fixed-window invoke counters shared by every API process. Losing them in a
-- crash only resets a rate window, so the table is unlogged.
CREATE UNLOGGED TABLE invoke_rate_windows (
    organization_id text        NOT NULL,
    session_id      text        NOT NULL,
    window_start    timestamptz NOT NULL,
    count           integer     NOT NULL,
    PRIMARY KEY (organization_id, session_id, window_start)
);
