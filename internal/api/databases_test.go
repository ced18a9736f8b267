package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database/databasetest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// createDatabase registers a database and returns its id and source id.
func createDatabase(t *testing.T, b *apptest.Bundle, body map[string]any) (id, source string) {
	t.Helper()
	r := b.Do("POST", "/v1/databases", b.Owner(), body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	db := r.Body["database"].(map[string]any)
	return db["id"].(string), db["source_id"].(string)
}

// TestDatabase_EndToEnd registers a database through the API and runs its
// actions through the outbox and the worker: reads answer at once, writes
// are refused by the read-only transaction, a slow query is cancelled, a
// huge result is capped, and the URL appears in no answer, log, event or
// stored row.
func TestDatabase_EndToEnd(t *testing.T) {
	t.Parallel()
	var logs apptest.Logs
	b := apptest.Start(t, &apptest.Options{Logs: &logs})
	tg := databasetest.NewTarget(t)
	target, err := url.Parse(tg.URL)
	require.NoError(t, err)

	var answers []string
	record := func(r *apptest.Response) *apptest.Response { answers = append(answers, string(r.Raw)); return r }

	r := record(b.Do("POST", "/v1/databases", b.Admin(), map[string]any{
		"name": "shop", "url": tg.URL, "statement_timeout": "500ms", "max_rows": 5,
	}))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	db := r.Body["database"].(map[string]any)
	id, source := db["id"].(string), db["source_id"].(string)
	require.Equal(t, "database:"+id, source)
	require.Equal(t, target.Host, db["host"])
	require.Equal(t, strings.TrimPrefix(target.Path, "/"), db["database"])
	require.Equal(t, "500ms", db["statement_timeout"])
	require.Equal(t, float64(5), db["max_rows"])
	require.NotContains(t, db, "url")

	r = record(b.Do("POST", "/v1/databases", b.Owner(), map[string]any{"name": "shop", "url": tg.URL}))
	requireAPIError(t, r, http.StatusConflict, "conflict")
	require.Len(t, record(b.Do("GET", "/v1/databases", b.Owner(), nil)).Body["databases"], 1)
	require.Equal(t, http.StatusOK, record(b.Do("GET", "/v1/databases/"+id, b.Admin(), nil)).Status)
	require.Equal(t, http.StatusNotFound, record(b.Do("GET", "/v1/databases/"+id, b.Token(authClaims("org-2")), nil)).Status)

	// The catalog lists the three actions with their tiers; reads run at once.
	r = record(b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", b.Sandbox(), nil))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	got := map[string]string{}
	for _, a := range r.Body["actions"].([]any) {
		a := a.(map[string]any)
		if a["source"] == source {
			got[a["action"].(string)] = a["risk_tier"].(string) + " " + a["mode"].(string)
		}
	}
	require.Equal(t, map[string]string{"query": "R1 allow", "list_tables": "R0 allow", "describe_table": "R0 allow"}, got)
	r = record(b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/guide/"+source, b.Sandbox(), nil))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), source+".query")

	r = record(invokeTool(b, source, "query", map[string]any{"sql": "SELECT id, name FROM shop.items WHERE id <= $1 ORDER BY id", "params": []any{2}}))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "allow", r.Body["invocation"].(map[string]any)["mode"])
	res := r.Body["result"].(map[string]any)
	require.Equal(t, []any{[]any{float64(1), "apple"}, []any{float64(2), "pear"}}, res["rows"])
	require.Equal(t, false, res["truncated"])

	r = record(invokeTool(b, source, "list_tables", map[string]any{"schema": "shop"}))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Len(t, r.Body["result"].(map[string]any)["tables"], 2)
	r = record(invokeTool(b, source, "describe_table", map[string]any{"schema": "shop", "table": "items"}))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, []any{"id"}, r.Body["result"].(map[string]any)["primary_key"])

	// Params are checked against the schema before anything is written.
	requireAPIError(t, record(invokeTool(b, source, "query", map[string]any{"sql": ""})), http.StatusBadRequest, "invalid_request")
	requireAPIError(t, record(invokeTool(b, source, "query", map[string]any{"sql": "SELECT 1", "limit": 3})), http.StatusBadRequest, "invalid_request")

	// A write fails at once, refused by the read-only transaction, though
	// the role may write.
	for _, sql := range []string{"INSERT INTO shop.items (name) VALUES ('agent')", "SELECT shop.write_item('agent')", "DROP TABLE shop.items"} {
		r = record(invokeTool(b, source, "query", map[string]any{"sql": sql}))
		e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
		require.Contains(t, e["message"], "read_only_transaction", sql)
	}
	r = record(invokeTool(b, source, "query", map[string]any{"sql": "COMMIT; INSERT INTO shop.items (name) VALUES ('agent')"}))
	requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Equal(t, 3, tg.ItemCount(t))

	// A slow query is cancelled by the statement timeout, without retry.
	start := time.Now()
	r = record(invokeTool(b, source, "query", map[string]any{"sql": "SELECT pg_sleep(30)"}))
	e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Contains(t, e["message"], "statement_timeout")
	require.Less(t, time.Since(start), 10*time.Second)
	slowID := r.Body["invocation"].(map[string]any)["id"].(string)
	waitJobState(t, b, slowID, "cancelled")

	// A huge result stops at max_rows.
	r = record(invokeTool(b, source, "query", map[string]any{"sql": "SELECT n, pad FROM big ORDER BY n"}))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	res = r.Body["result"].(map[string]any)
	require.Equal(t, true, res["truncated"])
	require.Equal(t, "max_rows", res["truncated_by"])
	require.Len(t, res["rows"], 5)
	// And at the byte budget, whatever max_rows allows.
	r = record(b.Do("PATCH", "/v1/databases/"+id, b.Owner(), map[string]any{"max_rows": 10000}))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = record(invokeTool(b, source, "query", map[string]any{"sql": "SELECT n, pad FROM big ORDER BY n"}))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	res = r.Body["result"].(map[string]any)
	require.Equal(t, "max_bytes", res["truncated_by"])
	require.Less(t, len(res["rows"].([]any)), 100)
	require.LessOrEqual(t, len(r.Raw), 32<<10)

	// The URL was never shown, logged, or stored in the clear.
	ids := []string{slowID}
	for _, path := range []string{"/v1/invocations", "/v1/databases", "/v1/databases/" + id, "/v1/credentials", "/v1/dead-letters"} {
		require.Equal(t, http.StatusOK, record(b.Do("GET", path, b.Owner(), nil)).Status, path)
	}
	for _, inv := range record(b.Do("GET", "/v1/invocations?limit=100", b.Owner(), nil)).Body["invocations"].([]any) {
		ids = append(ids, inv.(map[string]any)["id"].(string))
	}
	for _, id := range ids {
		require.Equal(t, http.StatusOK, record(b.Do("GET", "/v1/invocations/"+id+"/events", b.Owner(), nil)).Status)
		record(b.Do("GET", "/v1/invocations/"+id+"/result-envelope", b.Owner(), nil))
	}
	require.NotEmpty(t, logs.String())
	for _, secret := range []string{tg.URL, tg.Password} {
		for i, a := range answers {
			require.NotContains(t, a, secret, "answer %d", i)
		}
		require.NotContains(t, logs.String(), secret)
		for _, q := range []string{
			`SELECT coalesce(string_agg(row_to_json(d)::text, ''), '') FROM org_databases d`,
			`SELECT coalesce(string_agg(row_to_json(i)::text, ''), '') FROM action_invocations i`,
			`SELECT coalesce(string_agg(row_to_json(e)::text, ''), '') FROM invocation_events e`,
			`SELECT coalesce(string_agg(encode(sealed, 'escape'), ''), '') FROM credentials`,
			`SELECT coalesce(string_agg(args::text || coalesce(errors::text, ''), ''), '') FROM river_job`,
		} {
			var dump string
			require.NoError(t, b.Pool.QueryRow(context.Background(), q).Scan(&dump))
			require.NotContains(t, dump, secret, q)
		}
	}

	// A new URL replaces the sealed one: a database that does not exist
	// fails the call with the server's refusal.
	wrong := *target
	wrong.Path = "/no_such_database"
	r = record(b.Do("PATCH", "/v1/databases/"+id, b.Owner(), map[string]any{"url": wrong.String()}))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "no_such_database", r.Body["database"].(map[string]any)["database"])
	r = record(invokeTool(b, source, "list_tables", map[string]any{}))
	e = requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Contains(t, e["message"], "connection_refused")
	require.NotContains(t, string(r.Raw), tg.Password)

	// Deleted: gone from the catalog, its URL with it.
	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/v1/databases/"+id, b.Owner(), nil).Status)
	require.Equal(t, http.StatusNotFound, b.Do("GET", "/v1/databases/"+id, b.Owner(), nil).Status)
	require.Equal(t, http.StatusNotFound, invokeTool(b, source, "list_tables", map[string]any{}).Status)
	require.Equal(t, 0, countRows(t, b, `SELECT count(*) FROM credentials WHERE integration LIKE 'database:%'`))
}

// TestDatabase_PrivateNetworksRefused: without
// connectors.allow_private_networks a literal internal address is refused
// when the database is saved, and a name that resolves to one when a call
// dials it.
func TestDatabase_PrivateNetworksRefused(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{DenyPrivateNetworks: true})
	tg := databasetest.NewTarget(t)

	for _, raw := range []string{tg.URL, "postgres://u:p@10.0.0.5/app", "postgres://u:p@169.254.169.254/app", "postgres://u:p@[::1]/app"} {
		r := b.Do("POST", "/v1/databases", b.Owner(), map[string]any{"name": "local", "url": raw})
		e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		require.Contains(t, e["message"], "private", raw)
		require.NotContains(t, string(r.Raw), "p@", "the URL is not repeated")
	}
	require.Equal(t, 0, countRows(t, b, `SELECT count(*) FROM org_databases`))

	local, err := url.Parse(tg.URL)
	require.NoError(t, err)
	local.Host = "localhost:" + local.Port()
	_, source := createDatabase(t, b, map[string]any{"name": "by-name", "url": local.String()})
	r := invokeTool(b, source, "query", map[string]any{"sql": "SELECT 1"})
	e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Contains(t, e["message"], "address_not_allowed")
	id := r.Body["invocation"].(map[string]any)["id"].(string)
	require.Equal(t, string(invocation.StatusFailed), b.Invocation(id)["status"])
}

// TestDatabase_DeleteByItsSourceID: the path takes a database's id or its
// source id (database:<id>); either way the audit trail records the
// deletion under the database's id, as its creation and changes, so that
// filtering by it finds the whole history.
func TestDatabase_DeleteByItsSourceID(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	id, source := createDatabase(t, b, map[string]any{"name": "gone", "url": "postgres://u:pw-audit@db.example.com/app"})
	r := b.Do("PATCH", "/v1/databases/"+source, b.Owner(), map[string]any{"max_rows": 7})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/v1/databases/"+source, b.Owner(), nil).Status)

	r = b.Do("GET", "/v1/audit?target_type=database&target_id="+id, b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var actions []string
	for _, e := range r.Body["entries"].([]any) {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}
	require.ElementsMatch(t, []string{"database.create", "database.update", "database.delete"}, actions)
}
