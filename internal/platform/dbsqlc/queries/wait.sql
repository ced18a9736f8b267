-- name: InvocationWaitStart :execrows
-- Records a call waiting on an invocation it did not create. The share
-- lock on the invocation's row orders it with a withdrawal, which locks
-- the row for update before it reads the waits: either the withdrawal
-- sees this row, or this statement runs after it and, the invocation no
-- longer pending or approved, records nothing.
INSERT INTO invocation_waits (id, invocation_id)
SELECT @id, i.id FROM action_invocations AS i
WHERE i.id = @invocation_id AND i.status IN ('pending', 'approved', 'executing')
FOR SHARE;

-- name: InvocationWaitEnd :exec
DELETE FROM invocation_waits WHERE id = @id;

-- name: InvocationWaited :one
-- Whether a call other than its creator waits on an invocation.
SELECT EXISTS (SELECT 1 FROM invocation_waits WHERE invocation_id = @invocation_id)::boolean AS waited;
