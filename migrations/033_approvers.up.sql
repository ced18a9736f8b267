-- Who may approve (internal/domain/approvers): each person's approval of a
-- pending invocation, one row per approver, and the organization's approval
-- policy (how many distinct approvers each risk tier needs, and the approver
-- groups that decide whose inbox and which Slack channel get a request).
CREATE TABLE invocation_approvals (
    organization_id text        NOT NULL,
    invocation_id   uuid        NOT NULL REFERENCES action_invocations (id) ON DELETE CASCADE,
    approver        text        NOT NULL,
    decided_at      timestamptz NOT NULL DEFAULT now(),
    -- The digest of the intent (the params) the approver saw; '' when none
    -- was recorded.
    intent_digest   text        NOT NULL DEFAULT '',
    PRIMARY KEY (invocation_id, approver)
);
ALTER TABLE invocation_approvals ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON invocation_approvals
    USING (organization_id = current_setting('outboxd.org', true));

-- required: {"R4": 2, ...} over approvals.required; groups: the ordered
-- approver groups, [{"name", "members", "roles", "sources", "tiers",
-- "slack_channel"}], first match wins.
CREATE TABLE approval_policies (
    organization_id text        PRIMARY KEY,
    required        jsonb       NOT NULL DEFAULT '{}',
    groups          jsonb       NOT NULL DEFAULT '[]',
    updated_by      text        NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE approval_policies ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON approval_policies
    USING (organization_id = current_setting('outboxd.org', true));
