DROP TABLE org_connectors;
