CREATE INDEX IF NOT EXISTS river_job_args_index ON river_job USING GIN (args);
CREATE INDEX IF NOT EXISTS river_job_metadata_index ON river_job USING GIN (metadata);
