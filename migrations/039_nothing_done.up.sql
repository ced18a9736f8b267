-- nothing_done: the invocation's last execution ended in a refusal that,
-- by the provider's API, did nothing (a rate limit that refused the
-- request), after any look-up for an earlier execution's work had found
-- none. No execution so far may have acted, so the next one is not a
-- retry and need not look again: for Slack, whose look-up
-- (conversations.history) is limited to one call a minute for apps outside
-- its Marketplace, every rate-limited post otherwise queued behind it.
-- Each start sets it back to false.
ALTER TABLE action_invocations ADD COLUMN nothing_done boolean NOT NULL DEFAULT false;
