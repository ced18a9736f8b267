DROP TABLE approval_policies;
DROP TABLE invocation_approvals;
