-- The event feeds' horizon: the lowest transaction id that may still
-- commit events of this database. Below it, every event is visible or
-- will never be, so a feed may deliver up to it without ever passing an
-- event that commits later with a lower (xid, id).
--
-- The snapshot's xmin would do, but it is the cluster's: a writing
-- transaction left open in any other database of the server (another
-- application's, a migration, a test's) held every organization's event
-- streams, webhooks and Slack messages for as long as it stayed open. An
-- in-progress id running in another database, as pg_stat_activity shows
-- it, cannot write here and is passed over. One that has ended since the
-- snapshot, or whose backend is not listed (a prepared transaction), still
-- counts: the next read takes a newer snapshot. A backend never changes
-- database, so an id of this database is never taken for another's.
--
-- STABLE: it reads the statement's snapshot, the one its caller's rows
-- are read with. The backends are read (pg_stat_get_activity, the function
-- under pg_stat_activity without its joins, a few hundred microseconds on
-- a busy server) only when the snapshot has ids in progress; the feeds
-- ask only about events the snapshot's xmin does not settle already.
CREATE FUNCTION feed_horizon() RETURNS xid8
LANGUAGE sql STABLE PARALLEL RESTRICTED AS $$
  SELECT coalesce(
    (SELECT min(x) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
      WHERE x::text::bigint % 4294967296 NOT IN (
        SELECT a.backend_xid::text::bigint FROM pg_stat_get_activity(NULL) AS a
        WHERE a.backend_xid IS NOT NULL AND a.datid <> 0
          AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database()))),
    pg_snapshot_xmax(pg_current_snapshot()))
$$;
