-- Revoked bearer tokens. A revocation refuses an organization's tokens
-- issued before issued_before (its cut-off) that carry its jti, its
-- session_id or its automation_id, or, with none of these, every token of
-- the organization issued before the cut-off. A token without iat counts as
-- issued before every cut-off. For a revocation by jti, session or
-- automation the cut-off is the revocation's time rounded up to the second
-- (iat is in whole seconds): tokens minted later for the same session or
-- automation are not refused. A revocation can be dropped at expires_at,
-- when every token it could match has expired (auth.max_lifetime after the
-- cut-off, or the revoked token's own exp); NULL: kept.
CREATE TABLE token_revocations (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    organization_id text        NOT NULL,
    jti             text,
    session_id      text,
    automation_id   text,
    issued_before   timestamptz NOT NULL,
    revoked_by      text        NOT NULL,
    revoked_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz,
    CHECK (num_nonnulls(jti, session_id, automation_id) <= 1)
);
CREATE INDEX token_revocations_org ON token_revocations (organization_id, id);
CREATE INDEX token_revocations_expires_at ON token_revocations (expires_at);
ALTER TABLE token_revocations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON token_revocations
    USING (organization_id = current_setting('outboxd.org', true));

-- Every API process keeps all organizations' revocations in memory and
-- polls this one row (auth.revocation_refresh) to learn that they changed:
-- every insert, update or delete of a revocation bumps version in its
-- transaction, so a process that reads a new version and then the table in
-- one snapshot sees every revocation committed before. The row is the
-- processes', not an organization's: the API's tenant role cannot read or
-- write it; the trigger, which runs as the owner, does.
CREATE TABLE token_revocation_version (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version   bigint  NOT NULL
);
INSERT INTO token_revocation_version (version) VALUES (0);
DO $$
BEGIN
    EXECUTE format('REVOKE ALL ON %I.token_revocation_version FROM outboxd_tenant', current_schema());
END
$$;

CREATE FUNCTION outboxd_bump_revocation_version() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE token_revocation_version SET version = version + 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER bump_revocation_version AFTER INSERT OR UPDATE OR DELETE ON token_revocations
    FOR EACH ROW EXECUTE FUNCTION outboxd_bump_revocation_version();
