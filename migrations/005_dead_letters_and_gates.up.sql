-- Dead letters: failed invocations an operator can replay (same id, same
-- idempotency key) or discard; who did it and when is kept.
ALTER TABLE action_invocations
    ADD COLUMN dead_lettered_at timestamptz,
    ADD COLUMN replay_count     integer NOT NULL DEFAULT 0,
    ADD COLUMN replayed_by      text,
    ADD COLUMN replayed_at      timestamptz,
    ADD COLUMN discarded_by     text,
    ADD COLUMN discarded_at     timestamptz;

CREATE INDEX action_invocations_dead_letters ON action_invocations (organization_id, dead_lettered_at DESC)
    WHERE dead_lettered_at IS NOT NULL AND discarded_at IS NULL;

-- Quiet hours: a daily window, in a time zone, when an organization's jobs
-- (or only those of one rate bucket; '' = all) wait instead of running.
CREATE TABLE quiet_hours (
    organization_id text        NOT NULL,
    bucket          text        NOT NULL DEFAULT '',
    time_zone       text        NOT NULL,
    start_minute    integer     NOT NULL CHECK (start_minute BETWEEN 0 AND 1439),
    end_minute      integer     NOT NULL CHECK (end_minute BETWEEN 0 AND 1439),
    updated_by      text        NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, bucket)
);

-- Do-not-contact: recipients (glob patterns matched against an action's
-- declared recipient fields, such as a Slack channel) never contacted.
CREATE TABLE do_not_contact (
    organization_id text        NOT NULL,
    pattern         text        NOT NULL,
    created_by      text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, pattern)
);
