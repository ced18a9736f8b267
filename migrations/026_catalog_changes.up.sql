-- A change to what shapes an organization's catalog (its action modes,
-- which integrations have a credential, its connectors and databases) is
-- announced on the channel outboxd_catalog_changes, with the
-- organization's id as the payload, so that every API process can tell the
-- MCP clients connected to it that their tool list changed
-- (notifications/tools/list_changed). A listener re-reads the catalog of
-- the callers it serves in that organization and tells those whose list
-- really changed. Postgres delivers one notification per transaction for
-- the same payload, so a statement touching many rows announces once.
CREATE FUNCTION outboxd_announce_catalog_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outboxd_catalog_changes',
        CASE WHEN TG_OP = 'DELETE' THEN OLD.organization_id ELSE NEW.organization_id END);
    RETURN NULL;
END;
$$;

CREATE TRIGGER announce_catalog_change AFTER INSERT OR UPDATE OR DELETE ON action_modes
    FOR EACH ROW EXECUTE FUNCTION outboxd_announce_catalog_change();
-- A credential's value being refreshed changes no catalog; one stored or
-- removed does.
CREATE TRIGGER announce_catalog_change AFTER INSERT OR DELETE ON credentials
    FOR EACH ROW EXECUTE FUNCTION outboxd_announce_catalog_change();
CREATE TRIGGER announce_catalog_change AFTER INSERT OR UPDATE OR DELETE ON org_connectors
    FOR EACH ROW EXECUTE FUNCTION outboxd_announce_catalog_change();
CREATE TRIGGER announce_catalog_change AFTER INSERT OR UPDATE OR DELETE ON org_databases
    FOR EACH ROW EXECUTE FUNCTION outboxd_announce_catalog_change();
