DROP TRIGGER announce_catalog_change ON org_databases;
DROP TRIGGER announce_catalog_change ON org_connectors;
DROP TRIGGER announce_catalog_change ON credentials;
DROP TRIGGER announce_catalog_change ON action_modes;
DROP FUNCTION outboxd_announce_catalog_change();
