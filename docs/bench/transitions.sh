#!/usr/bin/env bash
# Times an invocation's three transitions in Postgres alone, with pgbench:
# outboxd's own statements on the migrated schema (transitions.sql) against
# the same transitions on a minimal table (minimal.sql). Each statement
# handles a group of 50, with kept plans (-M prepared) and
# synchronous_commit off, so that the times are work rather than waits
# for the disk. Run from the repository's root:
#
#   PGHOST=127.0.0.1 PGUSER=postgres docs/bench/transitions.sh [seconds]
#
# The server is the one libpq's PG* variables name; the role needs
# CREATEDB. A scratch database is made, migrated and dropped.
set -euo pipefail
seconds=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
db=outboxd_transitions_$$
psql -X -q -d postgres -c "CREATE DATABASE $db"
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
go run ./cmd/outboxd migrate up --database-url "dbname=$db" >/dev/null
psql -X -q -d "$db" <<'SQL'
CREATE TABLE minimal_invocations (
    id uuid PRIMARY KEY, organization_id text NOT NULL, status text NOT NULL, event_seq int NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE minimal_events (
    id bigserial PRIMARY KEY, invocation_id uuid NOT NULL, seq int NOT NULL, type text NOT NULL,
    to_status text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
SQL
export PGOPTIONS='-c synchronous_commit=off'
for script in transitions minimal; do
	# Fill the tables and gather their statistics first: a plan kept from an
	# empty table would scan the whole table for every group.
	pgbench -n -c 1 -T 3 -f "$here/$script.sql" "$db" >/dev/null
	psql -X -q -d "$db" -c ANALYZE
	echo "$script.sql: ms per statement of 50 (insert, begin, completion)"
	pgbench -n -M prepared -r -c 1 -T "$seconds" -f "$here/$script.sql" "$db" |
		awk '/statement latencies/ { on = 1; next } on && $3 == "WITH" { print "  " $1 }'
done
