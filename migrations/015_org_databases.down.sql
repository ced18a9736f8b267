DELETE FROM credentials WHERE integration LIKE 'database:%';
DROP TABLE org_databases;
