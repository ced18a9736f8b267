-- Remote MCP servers an organization plugs in. Secrets are not here: they
-- live sealed in credentials under integration 'connector:<id>'.
CREATE TABLE org_connectors (
    id                  uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id     text        NOT NULL,
    name                text        NOT NULL,
    transport           text        NOT NULL DEFAULT 'remote_http' CHECK (transport = 'remote_http'),
    url                 text        NOT NULL,
    auth_type           text        NOT NULL DEFAULT 'none' CHECK (auth_type IN ('none', 'bearer', 'custom_header')),
    auth_header         text        NOT NULL DEFAULT '',
    -- {"default": "<risk>", "tools": {"<tool>": "<risk>"}}
    risk_policy         jsonb       NOT NULL DEFAULT '{}',
    -- {"<tool>": {"mode": "<mode>", "hash": "<definition hash>"}}: what an
    -- admin reviewed; a tool whose hash changed since has drifted.
    tool_risk_overrides jsonb       NOT NULL DEFAULT '{}',
    enabled             boolean     NOT NULL DEFAULT true,
    created_by          text        NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, name)
);

CREATE INDEX org_connectors_org ON org_connectors (organization_id);
