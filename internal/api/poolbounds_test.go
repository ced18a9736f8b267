package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// TestAPIPool_StuckRequestsAreAnswered: an organization's requests stuck
// in the database (here its changes, waiting for its audit chain, which a
// long transaction holds) are cut at database.statement_timeout and its
// requests past its share of the API's pool give up waiting for one at
// database.org_conn_wait: both are answered 503 with a code and a
// Retry-After, never the statement. Before, both waited as long as the
// lock was held: a statement through the API's pool had no timeout, and
// a wait for the organization's share ended only with the request. The
// owner's pool (workers, River, LISTEN) is not bounded. An MCP request
// waiting for the share gets a JSON-RPC error with the same code and
// when to retry, not a bare "internal error".
func TestAPIPool_StuckRequestsAreAnswered(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	ctx := context.Background()
	agent := mcpSession(t, b, b.Sandbox())
	// The API's tenant pool and the organization's share of it (app.New).
	tenantConns := min(b.Pool.Config().MaxConns, app.PoolSize(app.RoleAPI, 0, runtime.GOMAXPROCS(0)))
	share := dbutil.OrgShare(tenantConns)

	lock, err := b.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('outboxd.audit:' || $1::text, 0))`, apptest.Org)
	require.NoError(t, err)

	// The share of org-1's changes holds its connections, the rest wait
	// for one. A request still unanswered after two minutes (statement
	// timeout 30 s, share wait 10 s) is stuck.
	type answer struct {
		status int
		header http.Header
		raw    []byte
	}
	answers := make(chan answer, share+2)
	reqCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	// Once the share's changes all wait for the chain, an MCP request of
	// the organization waits for a connection of its share, and gives up.
	var mcpErr error
	wg.Go(func() {
		require.Eventually(t, func() bool {
			var waiting int
			require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND pid <> pg_backend_pid()`).Scan(&waiting))
			return waiting >= share
		}, time.Minute, 50*time.Millisecond)
		_, mcpErr = agent.ListTools(reqCtx, nil)
	})
	for range share + 2 {
		wg.Go(func() {
			resp, raw, err := b.Client(b.Owner()).Do(reqCtx, "PUT", "/v1/action-modes", []byte(`{"slack:send_message":"allow"}`),
				http.Header{"Content-Type": {"application/json"}})
			if err != nil {
				answers <- answer{raw: []byte(err.Error())}
				return
			}
			answers <- answer{status: resp.StatusCode, header: resp.Header, raw: raw}
		})
	}
	wg.Wait()
	close(answers)

	codes := map[string]int{}
	for a := range answers {
		require.Equal(t, http.StatusServiceUnavailable, a.status, "%s", a.raw)
		require.NotEmpty(t, a.header.Get("Retry-After"), "%s", a.raw)
		require.NotContains(t, string(a.raw), "advisory", "the statement's text is answered")
		require.NotContains(t, string(a.raw), "canceling statement")
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		require.NoError(t, json.Unmarshal(a.raw, &body), "%s", a.raw)
		codes[body.Error.Code]++
	}
	require.Positive(t, codes["database_timeout"], "no statement was cut at database.statement_timeout: %v", codes)
	require.Positive(t, codes["database_busy"], "no request gave up waiting for its organization's share: %v", codes)
	require.Equal(t, share+2, codes["database_timeout"]+codes["database_busy"], "%v", codes)
	var rpcErr *jsonrpc.Error
	require.ErrorAs(t, mcpErr, &rpcErr)
	require.Equal(t, int64(jsonrpc.CodeInternalError), rpcErr.Code)
	require.Contains(t, rpcErr.Message, "database_busy: ")
	require.Contains(t, rpcErr.Message, "retry in 1 s")
	require.JSONEq(t, `{"code":"database_busy","retry_after_seconds":1}`, string(rpcErr.Data))

	// Once the chain is free, org-1's connections and share are back.
	require.NoError(t, lock.Rollback(ctx))
	r := b.Do("PUT", "/v1/action-modes", b.Owner(), map[string]string{"slack:send_message": "allow"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// The owner's pool, which the API's is copied from, is not bounded.
	var setting string
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT current_setting('statement_timeout')`).Scan(&setting))
	require.Equal(t, "0", setting)
}

// TestSourceCaps_PerOrganization: an organization may have
// connectors.max_per_org MCP connectors and databases.max_per_org
// databases (50 each by default); one more is 409 and is not kept, also
// when the creates race; another organization has its own. Before, there
// was no cap: each connector and database gets a rate bucket, and each
// database a connection pool in every worker that calls it.
func TestSourceCaps_PerOrganization(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	kinds := []struct {
		path, key, list, key409 string
		max                     int
		body                    func(name string) map[string]any
	}{
		{"/v1/connectors", "connector", "connectors", "connectors.max_per_org", 50, func(name string) map[string]any {
			return map[string]any{"name": name, "url": "https://mcp.example.com/" + name, "transport": "remote_http"}
		}},
		{"/v1/databases", "database", "databases", "databases.max_per_org", 50, func(name string) map[string]any {
			return map[string]any{"name": name, "url": "postgres://reader:pw@127.0.0.1:1/" + name}
		}},
	}
	for _, k := range kinds {
		t.Run(k.list, func(t *testing.T) {
			var ids []string
			for i := range k.max {
				r := b.Do("POST", k.path, b.Owner(), k.body("s"+strconv.Itoa(i)))
				require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
				ids = append(ids, r.Body[k.key].(map[string]any)["id"].(string))
			}
			count := func() int {
				r := b.Do("GET", k.path, b.Owner(), nil)
				require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
				return len(r.Body[k.list].([]any))
			}
			r := b.Do("POST", k.path, b.Owner(), k.body("over"))
			require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
			require.Contains(t, string(r.Raw), k.key409)
			require.Equal(t, k.max, count(), "the one over the cap was kept")
			// Its name is free: it was not kept.
			require.Equal(t, http.StatusNoContent, b.Do("DELETE", k.path+"/"+ids[0], b.Owner(), nil).Status)
			r = b.Do("POST", k.path, b.Owner(), k.body("over"))
			require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

			// Another organization has its own.
			other := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
			r = b.Do("POST", k.path, other, k.body("first"))
			require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

			// Racing creates keep at most the cap.
			require.Equal(t, http.StatusNoContent, b.Do("DELETE", k.path+"/"+ids[1], b.Owner(), nil).Status)
			var created atomic.Int32
			var wg sync.WaitGroup
			for i := range 8 {
				body := mustJSON(t, k.body("race"+strconv.Itoa(i)))
				wg.Go(func() {
					resp, _, err := b.Client(b.Owner()).Do(context.Background(), "POST", k.path,
						body, http.Header{"Content-Type": {"application/json"}})
					if err == nil && resp.StatusCode == http.StatusCreated {
						created.Add(1)
					}
				})
			}
			wg.Wait()
			require.LessOrEqual(t, created.Load(), int32(1))
			require.LessOrEqual(t, count(), k.max)
		})
	}
}
