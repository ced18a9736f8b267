-- name: DatabaseInsert :one
INSERT INTO org_databases (organization_id, name, host, database, statement_timeout_ms, max_rows, created_by)
VALUES (@organization_id, @name, @host, @database, @statement_timeout_ms, @max_rows, @created_by)
RETURNING *;

-- name: DatabaseGet :one
SELECT * FROM org_databases WHERE id = @id AND organization_id = @organization_id;

-- name: DatabaseGetForUpdate :one
SELECT * FROM org_databases WHERE id = @id AND organization_id = @organization_id FOR UPDATE;

-- name: DatabaseList :many
SELECT * FROM org_databases WHERE organization_id = @organization_id ORDER BY name;

-- name: DatabaseUpdate :one
UPDATE org_databases
SET name = @name, host = @host, database = @database, statement_timeout_ms = @statement_timeout_ms,
    max_rows = @max_rows, updated_at = now()
WHERE id = @id AND organization_id = @organization_id
RETURNING *;

-- name: DatabaseDelete :execrows
DELETE FROM org_databases WHERE id = @id AND organization_id = @organization_id;
