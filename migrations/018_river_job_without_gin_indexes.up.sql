-- River creates two GIN indexes on river_job, on args and on metadata, for
-- searching jobs by their contents. Nothing in outboxd or in River's
-- fetch, completion and maintenance reads them (outboxd finds an
-- invocation's job through action_invocations.job_id), yet every insert
-- and every change of a job's state (fetched, completed: updates of an
-- indexed column, never HOT) adds entries to both, six per action. They
-- were a quarter of the write-ahead log of the batch path, and when their
-- pending lists fill, the statement that happens to insert next merges
-- them into the index while the others wait. Measured with outboxd bench:
-- Postgres CPU per batch action -20 %, single-envelope p99 400-500 ms ->
-- 140-170 ms. The reindexer is told to leave them out (worker.NewClient).
DROP INDEX IF EXISTS river_job_args_index;
DROP INDEX IF EXISTS river_job_metadata_index;
