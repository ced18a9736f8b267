-- What a pending invocation will do, rendered by a worker job (package
-- internal/domain/preview) for the approval card: the preview JSON when
-- rendered, or why not (failed, unsupported) in note. One row per
-- invocation, written once its job ran; no row means not rendered yet.
CREATE TABLE invocation_previews (
    invocation_id   uuid        PRIMARY KEY REFERENCES action_invocations (id) ON DELETE CASCADE,
    organization_id text        NOT NULL,
    status          text        NOT NULL CHECK (status IN ('rendered', 'failed', 'unsupported')),
    preview         jsonb,
    note            text        NOT NULL DEFAULT '',
    rendered_at     timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE invocation_previews ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON invocation_previews
    USING (organization_id = current_setting('outboxd.org', true));
