-- name: ApprovalPolicyGet :one
SELECT * FROM approval_policies WHERE organization_id = @organization_id;

-- name: ApprovalPolicyPut :exec
INSERT INTO approval_policies (organization_id, required, groups, updated_by) VALUES (@organization_id, @required, @groups, @updated_by)
ON CONFLICT (organization_id) DO UPDATE SET required = EXCLUDED.required, groups = EXCLUDED.groups, updated_by = EXCLUDED.updated_by, updated_at = now();

-- name: InvocationApprovalInsert :execrows
-- An approval approves the invocation's intent digest (package intent). A
-- second approval by the same person of the same intent changes nothing
-- (0 rows); after the intent changed (an approver's edit, or the worker
-- found the approved intent changed) it is a new approval.
INSERT INTO invocation_approvals (organization_id, invocation_id, approver, intent_digest)
VALUES (@organization_id, @invocation_id, @approver, @intent_digest)
ON CONFLICT (invocation_id, approver) DO UPDATE SET intent_digest = EXCLUDED.intent_digest, decided_at = now()
WHERE invocation_approvals.intent_digest <> EXCLUDED.intent_digest;

-- name: InvocationApprovalsList :many
-- The approvals of each invocation's current intent: those of an intent
-- since changed no longer count.
SELECT a.invocation_id, a.approver, a.decided_at FROM invocation_approvals a
JOIN action_invocations i ON i.id = a.invocation_id AND a.intent_digest = COALESCE(i.intent_digest, '')
WHERE a.invocation_id = ANY(@invocation_ids::uuid[]) ORDER BY a.invocation_id, a.decided_at, a.approver;

-- name: ApprovalPolicyChannelOrganizations :many
-- The organizations with an approver group that has a Slack channel.
SELECT organization_id FROM approval_policies WHERE jsonb_path_exists(groups, '$[*].slack_channel ? (@ != null)');
