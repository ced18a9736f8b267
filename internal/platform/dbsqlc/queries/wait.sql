-- name: InvocationWaitStart :execrows
-- Records a call waiting on an invocation it did not create. The share
-- lock on the invocation's row orders it with a withdrawal, which locks
-- the row for update before it reads the waits: either the withdrawal
-- sees this row, or this statement runs after it and, the invocation no
-- longer pending or approved, records nothing. The call waits at most
-- @bound: after that the row no longer counts, should its process have
-- died before deleting it.
INSERT INTO invocation_waits (id, invocation_id, until)
SELECT @id, i.id, now() + make_interval(secs => @bound::float8) FROM action_invocations AS i
WHERE i.id = @invocation_id AND i.status IN ('pending', 'approved', 'executing')
FOR SHARE;

-- name: InvocationWaitEnd :exec
DELETE FROM invocation_waits WHERE id = @id;

-- name: InvocationWaited :one
-- Whether a call other than its creator waits on an invocation (one
-- whose bound has not passed).
SELECT EXISTS (
    SELECT 1 FROM invocation_waits WHERE invocation_id = @invocation_id AND until > now()
)::boolean AS waited;
