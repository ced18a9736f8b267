-- name: ConnectorInsert :one
INSERT INTO org_connectors (organization_id, name, url, auth_type, auth_header, risk_policy, enabled, created_by)
VALUES (@organization_id, @name, @url, @auth_type, @auth_header, @risk_policy, @enabled, @created_by)
RETURNING *;

-- name: ConnectorGet :one
SELECT * FROM org_connectors WHERE id = @id AND organization_id = @organization_id;

-- name: ConnectorGetForUpdate :one
SELECT * FROM org_connectors WHERE id = @id AND organization_id = @organization_id FOR UPDATE;

-- name: ConnectorList :many
SELECT * FROM org_connectors WHERE organization_id = @organization_id ORDER BY name;

-- name: ConnectorListEnabled :many
SELECT * FROM org_connectors WHERE organization_id = @organization_id AND enabled ORDER BY name;

-- name: ConnectorUpdate :one
UPDATE org_connectors
SET name = @name, url = @url, auth_type = @auth_type, auth_header = @auth_header, risk_policy = @risk_policy,
    enabled = @enabled, updated_at = now()
WHERE id = @id AND organization_id = @organization_id
RETURNING *;

-- name: ConnectorSetToolOverrides :one
UPDATE org_connectors SET tool_risk_overrides = @tool_risk_overrides, updated_at = now()
WHERE id = @id AND organization_id = @organization_id
RETURNING *;

-- name: ConnectorDelete :execrows
DELETE FROM org_connectors WHERE id = @id AND organization_id = @organization_id;

-- name: CredentialDelete :exec
DELETE FROM credentials WHERE organization_id = @organization_id AND integration = @integration;
