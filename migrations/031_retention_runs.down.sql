DROP TABLE retention_runs;
