-- name: ApprovalPolicyGet :one
SELECT * FROM approval_policies WHERE organization_id = @organization_id;

-- name: ApprovalPolicyPut :exec
INSERT INTO approval_policies (organization_id, required, groups, updated_by) VALUES (@organization_id, @required, @groups, @updated_by)
ON CONFLICT (organization_id) DO UPDATE SET required = EXCLUDED.required, groups = EXCLUDED.groups, updated_by = EXCLUDED.updated_by, updated_at = now();

-- name: InvocationApprovalInsert :execrows
-- A second approval by the same person changes nothing (0 rows).
INSERT INTO invocation_approvals (organization_id, invocation_id, approver) VALUES (@organization_id, @invocation_id, @approver)
ON CONFLICT (invocation_id, approver) DO NOTHING;

-- name: InvocationApprovalsList :many
SELECT invocation_id, approver, decided_at FROM invocation_approvals
WHERE invocation_id = ANY(@invocation_ids::uuid[]) ORDER BY invocation_id, decided_at, approver;

-- name: ApprovalPolicyChannelOrganizations :many
-- The organizations with an approver group that has a Slack channel.
SELECT organization_id FROM approval_policies WHERE jsonb_path_exists(groups, '$[*].slack_channel ? (@ != null)');
