#!/usr/bin/env bash
# Times an invocation's three transitions in Postgres alone, with pgbench:
# outboxd's own statements (InvocationInsertMany, InvocationBeginMany and
# InvocationCompleteMany, read from internal/platform/dbsqlc/queries/invocation.sql,
# their parameters filled for a group of 50) on the migrated schema, against
# the same transitions on a minimal table (minimal.sql). Each statement is
# one transaction, as in the worker; plans are kept (-M prepared) and
# synchronous_commit is off, so that the times are work rather than waits
# for the disk. Run from the repository's root:
#
#   PGHOST=127.0.0.1 PGUSER=postgres docs/bench/transitions.sh [seconds]
#   docs/bench/transitions.sh --print    # the pgbench script of outboxd's statements
#
# The server is the one libpq's PG* variables name; the role needs
# CREATEDB. A scratch database is made, migrated and dropped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# script prints the pgbench script: the three statements in the order an
# action meets them, with a group's values in place of their parameters
# (pgbench's :g names the group).
script() {
	awk -v sq="'" '
	function q(s) { return sq s sq }
	function fill(s,    k, i) {
		for (k in with) {
			while ((i = index(s, k)) > 0) s = substr(s, 1, i - 1) with[k] substr(s, i + length(k))
		}
		return s
	}
	BEGIN {
		group = " FROM generate_series(1, 50) n"
		id = "md5((:g)::bigint::text || " q("-") " || n)::uuid"
		with["@invocations::jsonb"] = "(SELECT jsonb_agg(jsonb_build_object(" \
			q("id") ", " id ", " q("job_id") ", (:g)::bigint * 100 + n, " \
			q("organization_id") ", " q("bench-org") ", " q("requested_by") ", " q("svc-bench") ", " \
			q("origin") ", " q("envelope") ", " q("integration") ", " q("slack") ", " \
			q("action") ", " q("send_message") ", " q("risk_level") ", " q("medium") ", " \
			q("mode") ", " q("allow") ", " q("mode_source") ", " q("override") ", " \
			q("params") ", " q("{\"channel\": \"C1\", \"text\": \"bench message\"}") "::jsonb, " \
			q("params_hash") ", md5(n::text), " q("status") ", " q("approved") ", " \
			q("external_id") ", " q("batch-") " || (:g)::bigint::text || " q("-") " || n, " \
			q("rate_bucket") ", " q("slack.minute") ", " q("approval") ", " q("auto") "))" group ")::jsonb"
		with["@ids::uuid[]"] = "ARRAY(SELECT " id group ")"
		with["@attempts::int[]"] = "array_fill(1, ARRAY[50])"
		with["@results::jsonb[]"] = "array_fill(" q("{\"ok\": true, \"channel\": \"C1\", \"ts\": \"1503435956.000247\"}") "::jsonb, ARRAY[50])"
		with["@provider_refs::text[]"] = "array_fill(" q("C1/1503435956.000247") "::text, ARRAY[50])"
		with["@conflicts::bool[]"] = "array_fill(false, ARRAY[50])"
		with["@steps::jsonb[]"] = "array_fill(NULL::jsonb, ARRAY[50])"
		with["@durations_ms::int[]"] = "array_fill(3, ARRAY[50])"
		with["sqlc.embed(i)"] = "i.*"
	}
	/^-- name: / { name = $3; next }
	name ~ /^Invocation(InsertMany|BeginMany|CompleteMany)$/ && !/^--/ && NF { text[name] = text[name] fill($0) "\n" }
	END {
		print "\\set g random(1, 2000000000)"
		printf "%s%s%s", text["InvocationInsertMany"], text["InvocationBeginMany"], text["InvocationCompleteMany"]
	}
	' internal/platform/dbsqlc/queries/invocation.sql
}

if [ "${1:-}" = --print ]; then
	script
	exit
fi
seconds=${1:-10}
db=outboxd_transitions_$$
transitions=$(mktemp --suffix=.sql)
script >"$transitions"
psql -X -q -d postgres -c "CREATE DATABASE $db"
trap 'rm -f "$transitions"; psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
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
for file in "$transitions" "$here/minimal.sql"; do
	# Fill the tables and gather their statistics first: a plan kept from an
	# empty table would scan the whole table for every group.
	pgbench -n -c 1 -T 3 -f "$file" "$db" >/dev/null
	psql -X -q -d "$db" -c ANALYZE
	name=minimal
	if [ "$file" = "$transitions" ]; then name=transitions; fi
	echo "$name: ms per statement of 50 (insert, begin, completion)"
	pgbench -n -M prepared -r -c 1 -T "$seconds" -f "$file" "$db" |
		awk '/statement latencies/ { on = 1; next } on && $3 == "WITH" { print "  " $1 }'
done
