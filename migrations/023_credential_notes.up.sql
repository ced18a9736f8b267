-- What the workers learned about a stored credential that its owner should
-- see once where the credential is listed: a Slack token without the
-- history scope, with which a retry cannot look for the message an earlier
-- attempt posted (reconcile_unavailable). Storing the credential again
-- clears it.
ALTER TABLE credentials ADD COLUMN note text NOT NULL DEFAULT '';
