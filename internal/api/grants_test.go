package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database/databasetest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/worker"
)

// grantBundle runs outboxd with a Slack token and send_message waiting for
// a human.
func grantBundle(t *testing.T) *apptest.Bundle {
	t.Helper()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-org")
	b.SetModes(map[string]string{"slack:send_message": "require_approval"})
	return b
}

// pendingInvoke invokes send_message and requires it to wait for a human.
func pendingInvoke(t *testing.T, b *apptest.Bundle, channel, text string) string {
	t.Helper()
	r := b.Invoke("send_message", map[string]any{"channel": channel, "text": text})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.Equal(t, "pending", r.Body["invocation"].(map[string]any)["status"], string(r.Raw))
	return r.Body["invocation_id"].(string)
}

// approveWithGrant approves id with a grant and returns the grant.
func approveWithGrant(t *testing.T, b *apptest.Bundle, id string, grant map[string]any) map[string]any {
	t.Helper()
	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"mode": "once", "grant": grant})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "approved", r.Body["invocation"].(map[string]any)["status"])
	g, ok := r.Body["grant"].(map[string]any)
	require.True(t, ok, "the answer has the grant: %s", r.Raw)
	return g
}

// listGrant returns grant id as GET /v1/grants lists it.
func listGrant(t *testing.T, b *apptest.Bundle, id string) map[string]any {
	t.Helper()
	r := b.Do("GET", "/v1/grants", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	for _, g := range r.Body["grants"].([]any) {
		if g.(map[string]any)["id"] == id {
			return g.(map[string]any)
		}
	}
	t.Fatalf("grant %s not listed: %s", id, r.Raw)
	return nil
}

// sealedCredential is the organization's sealed credential of integration,
// as stored.
func sealedCredential(t *testing.T, b *apptest.Bundle, integration string) string {
	t.Helper()
	var hex string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT encode(sealed, 'hex') FROM credentials WHERE integration = $1 AND user_id = ''`, integration).Scan(&hex))
	return hex
}

// refuseRevocations makes every change of a grant fail until the returned
// function is called. The requests refused meanwhile answer 500, which the
// API document does not list per route, so the contract check is off.
func refuseRevocations(t *testing.T, b *apptest.Bundle) (allow func()) {
	t.Helper()
	_, err := b.Pool.Exec(context.Background(), `CREATE FUNCTION refuse_revoke() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'no revocations today'; END $$;
		CREATE TRIGGER refuse_revoke BEFORE UPDATE ON grants FOR EACH ROW EXECUTE FUNCTION refuse_revoke()`)
	require.NoError(t, err)
	b.Contract = nil
	return func() {
		_, err := b.Pool.Exec(context.Background(), `DROP TRIGGER refuse_revoke ON grants`)
		require.NoError(t, err)
	}
}

// TestGrants_CountAndConstraints: a grant of 2 lets exactly the next 2
// invocations of the same action to the same channel through, each
// recording the grant; one to another channel, and the third, wait for a
// human. The grant is listed, used up, and its creation audited.
func TestGrants_CountAndConstraints(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	first := pendingInvoke(t, b, "C0123456789", "first")
	g := approveWithGrant(t, b, first, map[string]any{"count": 2, "minutes": 10, "fixed": []string{"channel"}})
	grantID := g["id"].(string)
	require.Equal(t, "session", g["scope"])
	require.Equal(t, apptest.Session, g["scope_id"])
	require.Nil(t, g["user_id"], "the invocation was made for no user")
	require.Equal(t, map[string]any{"channel": "C0123456789"}, g["fixed"])
	require.Equal(t, float64(2), g["remaining"])
	require.Equal(t, first, g["created_from"])
	b.WaitStatus(first, invocation.StatusCompleted, 10*time.Second)

	// Another channel is outside the grant: a human decides.
	other := pendingInvoke(t, b, "C9999999999", "elsewhere")
	require.Nil(t, b.Invocation(other)["grant_id"])

	for _, text := range []string{"second", "third"} {
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": text})
		require.Equal(t, http.StatusOK, r.Status, "the grant lets it through: %s", r.Raw)
		inv := r.Body["invocation"].(map[string]any)
		require.Equal(t, grantID, inv["grant_id"])
		require.Equal(t, "grant", inv["mode_source"])
		require.Equal(t, "completed", inv["status"])
	}
	last := pendingInvoke(t, b, "C0123456789", "fourth")
	require.Nil(t, b.Invocation(last)["grant_id"], "the grant is used up")

	listed := listGrant(t, b, grantID)
	require.Equal(t, float64(0), listed["remaining"])
	require.Equal(t, false, listed["active"])
	active := b.Do("GET", "/v1/grants?active=true", b.Admin(), nil)
	require.Equal(t, http.StatusOK, active.Status, string(active.Raw))
	require.Empty(t, active.Body["grants"])

	trail := b.Do("GET", "/v1/audit?action=grant.create", b.Owner(), nil)
	require.Equal(t, http.StatusOK, trail.Status, string(trail.Raw))
	require.Len(t, trail.Body["entries"], 1)
	require.Equal(t, grantID, trail.Body["entries"].([]any)[0].(map[string]any)["target_id"])

	// Members read no grants; a grant needs mode once; bad specs are 400
	// and approve nothing.
	requireAPIError(t, b.Do("GET", "/v1/grants", b.Member(), nil), http.StatusForbidden, "forbidden")
	for _, bad := range []map[string]any{
		{"mode": "always", "grant": map[string]any{"count": 1, "minutes": 1}},
		{"grant": map[string]any{"count": 0, "minutes": 1}},
		{"grant": map[string]any{"count": 1, "minutes": 0}},
		{"grant": map[string]any{"count": 1, "minutes": 1, "fixed": []string{"nosuch"}}},
		{"grant": map[string]any{"count": 1, "minutes": 1, "fixed": []string{"channel", "channel"}}},
	} {
		r := b.Do("POST", "/v1/invocations/"+last+"/approve", b.Admin(), bad)
		require.Equal(t, http.StatusBadRequest, r.Status, "%v: %s", bad, r.Raw)
		require.Equal(t, "pending", b.Invocation(last)["status"], "nothing was approved")
	}
	require.Len(t, b.Do("GET", "/v1/grants", b.Admin(), nil).Body["grants"], 1, "no grant was made")
}

// TestGrants_TimedExpiryAndRevocation: a grant past its time lets nothing
// through; a revoked one neither; revoking is audited and twice is 409.
func TestGrants_TimedExpiryAndRevocation(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	g := approveWithGrant(t, b, pendingInvoke(t, b, "C0123456789", "first"), map[string]any{"count": 5, "minutes": 1})
	r := b.Invoke("send_message", map[string]any{"channel": "C0000000001", "text": "any channel"})
	require.Equal(t, http.StatusOK, r.Status, "no param fixed: any channel: %s", r.Raw)

	// The minute passes.
	_, err := b.Pool.Exec(context.Background(), `UPDATE grants SET expires_at = now() - interval '1 second' WHERE id = $1`, g["id"])
	require.NoError(t, err)
	pendingInvoke(t, b, "C0123456789", "too late")
	require.Equal(t, false, listGrant(t, b, g["id"].(string))["active"])

	g2 := approveWithGrant(t, b, pendingInvoke(t, b, "C0123456789", "again"), map[string]any{"count": 5, "minutes": 60})
	id := g2["id"].(string)
	r = b.Do("DELETE", "/v1/grants/"+id, b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "manual", r.Body["grant"].(map[string]any)["revoke_reason"])
	pendingInvoke(t, b, "C0123456789", "after revocation")
	requireAPIError(t, b.Do("DELETE", "/v1/grants/"+id, b.Admin(), nil), http.StatusConflict, "conflict")
	requireAPIError(t, b.Do("DELETE", "/v1/grants/not-a-uuid", b.Admin(), nil), http.StatusNotFound, "not_found")
	trail := b.Do("GET", "/v1/audit?action=grant.revoke", b.Owner(), nil)
	require.Len(t, trail.Body["entries"], 1)

	// Another organization sees none of them.
	other := b.Token(authClaims("org-2"))
	r = b.Do("GET", "/v1/grants", other, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Body["grants"])
	requireAPIError(t, b.Do("DELETE", "/v1/grants/"+id, other, nil), http.StatusNotFound, "not_found")
}

// TestGrants_CredentialChangeRevokes: storing the source's credential
// again revokes its grants.
func TestGrants_CredentialChangeRevokes(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	g := approveWithGrant(t, b, pendingInvoke(t, b, "C0123456789", "first"), map[string]any{"count": 5, "minutes": 60})
	b.StoreSlackToken("xoxb-another")
	listed := listGrant(t, b, g["id"].(string))
	require.Equal(t, "credential", listed["revoke_reason"])
	require.Equal(t, "outboxd", listed["revoked_by"])
	pendingInvoke(t, b, "C0123456789", "new token")
}

// TestGrants_CredentialChangeAndRevocationCommitTogether: a credential
// stored again or deleted and the revocation of its source's grants are
// one transaction. While the revocation fails, the credential is neither
// replaced nor deleted, so no grant outlives the token it was given for.
func TestGrants_CredentialChangeAndRevocationCommitTogether(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	g := approveWithGrant(t, b, pendingInvoke(t, b, "C0123456789", "first"), map[string]any{"count": 5, "minutes": 60})
	before := sealedCredential(t, b, "slack")
	allow := refuseRevocations(t, b)
	r := b.Do("PUT", "/v1/credentials/slack", b.Owner(), map[string]string{"token": "xoxb-another"})
	require.Equal(t, http.StatusInternalServerError, r.Status, string(r.Raw))
	r = b.Do("DELETE", "/v1/credentials/slack", b.Owner(), nil)
	require.Equal(t, http.StatusInternalServerError, r.Status, string(r.Raw))
	require.Equal(t, before, sealedCredential(t, b, "slack"), "the credential is unchanged")
	require.Nil(t, listGrant(t, b, g["id"].(string))["revoked_at"])

	allow()
	r = b.Do("DELETE", "/v1/credentials/slack", b.Owner(), nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Raw))
	listed := listGrant(t, b, g["id"].(string))
	require.Equal(t, "credential", listed["revoke_reason"])
	require.NotNil(t, listed["revoked_at"])
}

// TestGrants_SecretsAreNeverFixed: a param holding a secret cannot be
// fixed, and an invocation without a session or automation gets no grant
// (there is none such on these routes: every invoke has a session and
// every envelope an automation).
func TestGrants_SecretsAreNeverFixed(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	id := pendingInvoke(t, b, "C0123456789", "token xoxb-1234567890-abcdefghij")
	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"grant": map[string]any{"count": 1, "minutes": 5, "fixed": []string{"text"}}})
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "secret")
	require.Equal(t, "pending", b.Invocation(id)["status"])
}

// TestGrants_RacingInvocations: N+1 invocations racing for a grant of N,
// through invoke and through the envelopes' group commit, let exactly N
// through.
func TestGrants_RacingInvocations(t *testing.T) {
	t.Parallel()
	const n = 4
	b := grantBundle(t)
	g := approveWithGrant(t, b, pendingInvoke(t, b, "C0123456789", "first"), map[string]any{"count": n, "minutes": 10, "fixed": []string{"channel"}})
	var wg sync.WaitGroup
	statuses := make([]int, n+1)
	for i := range n + 1 {
		wg.Go(func() {
			statuses[i] = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "race"}).Status
		})
	}
	wg.Wait()
	through := 0
	for _, s := range statuses {
		if s == http.StatusOK {
			through++
		}
	}
	require.Equal(t, n, through, "statuses %v", statuses)
	require.Equal(t, n, countByGrant(t, b, g["id"].(string)))

	// Envelopes of an automation, committed in groups.
	firstID := postEnvelope(t, b, envelope("env-first", nil), http.StatusCreated)["action_id"].(string)
	ge := approveWithGrant(t, b, firstID, map[string]any{"count": n, "minutes": 10, "fixed": []string{"channel"}})
	require.Equal(t, "automation", ge["scope"])
	for i := range n + 1 {
		wg.Go(func() {
			b.Do("POST", "/v1/envelopes", b.Service(), envelope("env-race-"+string(rune('a'+i)), nil))
		})
	}
	wg.Wait()
	require.Equal(t, n, countByGrant(t, b, ge["id"].(string)))
	var pending int
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM action_invocations WHERE external_id LIKE 'env-race-%' AND status = 'pending'`).Scan(&pending))
	require.Equal(t, 1, pending, "the one left waits for a human")
}

func countByGrant(t *testing.T, b *apptest.Bundle, id string) int {
	t.Helper()
	var n int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM action_invocations WHERE grant_id = $1`, id).Scan(&n))
	var remaining int
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT remaining FROM grants WHERE id = $1`, id).Scan(&remaining))
	require.Equal(t, 0, remaining)
	return n
}

// pendingNote starts outboxd with a connector, whose tool list it keeps a
// millisecond, and calls its create_note: source is the connector's source
// and id the invocation, which waits for a human.
func pendingNote(t *testing.T) (b *apptest.Bundle, srv *mcpServer, source, id string) {
	t.Helper()
	srv = newMCPServer(t)
	b = apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})
	_, source = createConnector(t, b, srv, nil)
	r := invokeTool(b, source, "create_note", map[string]any{"title": "first"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	return b, srv, source, r.Body["invocation_id"].(string)
}

// TestGrants_DriftRevokes: when a connector tool's definition changes, its
// grant is revoked at the next invocation, which waits for a human, and the
// audit trail records the revocation as outboxd's own.
func TestGrants_DriftRevokes(t *testing.T) {
	t.Parallel()
	b, srv, source, id := pendingNote(t)
	g := approveWithGrant(t, b, id, map[string]any{"count": 5, "minutes": 10})
	r := invokeTool(b, source, "create_note", map[string]any{"title": "granted"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, g["id"], r.Body["invocation"].(map[string]any)["grant_id"])

	require.Equal(t, false, listGrant(t, b, g["id"].(string))["drifted"])
	srv.addTool("create_note", "Create a note.",
		`{"type":"object","properties":{"title":{"type":"string"},"folder":{"type":"string"}},"required":["title","folder"]}`, nil)
	time.Sleep(2 * time.Millisecond)
	// Listed as drifted, not active, before any invocation revokes it.
	listed := listGrant(t, b, g["id"].(string))
	require.Equal(t, true, listed["drifted"])
	require.Equal(t, false, listed["active"])
	require.Nil(t, listed["revoked_at"])
	active := b.Do("GET", "/v1/grants?active=true", b.Admin(), nil)
	require.Equal(t, http.StatusOK, active.Status, string(active.Raw))
	require.Empty(t, active.Body["grants"])

	r = invokeTool(b, source, "create_note", map[string]any{"title": "drifted", "folder": "inbox"})
	require.Equal(t, http.StatusAccepted, r.Status, "a drifted tool waits for a human: %s", r.Raw)
	listed = listGrant(t, b, g["id"].(string))
	require.Equal(t, "drift", listed["revoke_reason"])
	require.Equal(t, float64(4), listed["remaining"])
	revokes := b.AuditEntries("action=grant.revoke")
	require.Len(t, revokes, 1)
	require.Equal(t, g["id"], revokes[0]["target_id"])
	require.Equal(t, map[string]any{"subject": "outboxd", "kind": "internal"}, revokes[0]["actor"])
	require.Equal(t, "drift", revokes[0]["after"].(map[string]any)["revoke_reason"])

	r = invokeTool(b, source, "create_note", map[string]any{"title": "drifted again", "folder": "inbox"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.Len(t, b.AuditEntries("action=grant.revoke"), 1, "a grant is revoked and recorded once")
}

// TestGrants_ApprovalAsksConnectorFirst: an approval that grants needs the
// tool's definition, which the connector's server is asked for before the
// invocation is locked: while that server is slow, a denial of the same
// invocation goes through, and the approval then finds it decided.
func TestGrants_ApprovalAsksConnectorFirst(t *testing.T) {
	t.Parallel()
	b, srv, _, id := pendingNote(t)
	time.Sleep(2 * time.Millisecond) // past the connector's cached tool list
	arrived, release := srv.holdLists(t)
	approved := make(chan *apptest.Response, 1)
	go func() {
		approved <- b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(),
			map[string]any{"mode": "once", "grant": map[string]any{"count": 5, "minutes": 10}})
	}()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the approval never asked the connector for its tools")
	}
	denied := make(chan *apptest.Response, 1)
	go func() {
		denied <- b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]any{"reason": "not now"})
	}()
	select {
	case r := <-denied:
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	case <-time.After(10 * time.Second): // the connector's own timeout is 15s
		t.Fatal("the denial waited for the approval's question to the connector")
	}
	release()
	r := <-approved
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	r = b.Do("GET", "/v1/grants", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Body["grants"], "no grant for a denied invocation")
}

// TestGrants_ConnectorSecretChangeRevokes: a connector given another
// secret loses the grants of its tools; one only renamed keeps them.
func TestGrants_ConnectorSecretChangeRevokes(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, nil)
	id, source := createConnector(t, b, srv, map[string]any{"type": "bearer", "secret": "first-secret-value"})
	call := func() *apptest.Response { return invokeTool(b, source, "create_note", map[string]any{"title": "note"}) }
	requireChangeRevokes(t, b, "/v1/connectors/"+id, source, call, map[string]any{"name": "notes again"},
		map[string]any{"auth": map[string]any{"type": "bearer", "secret": "second-secret-value"}})
}

// TestGrants_DatabaseURLChangeRevokes: a registered database given a URL
// (another server, database or role) loses the grants of its actions; one
// only renamed keeps them.
func TestGrants_DatabaseURLChangeRevokes(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	tg := databasetest.NewTarget(t)
	id, source := createDatabase(t, b, map[string]any{"name": "shop", "url": tg.URL})
	b.SetModes(map[string]string{source + ":query": "require_approval"})
	call := func() *apptest.Response {
		return invokeTool(b, source, "query", map[string]any{"sql": "SELECT name FROM shop.items WHERE id = $1", "params": []any{1}})
	}
	requireChangeRevokes(t, b, "/v1/databases/"+id, source, call, map[string]any{"name": "shop again"}, map[string]any{"url": tg.URL})
}

// requireChangeRevokes checks that an org-registered source's grants
// survive the PATCH rename of path and are revoked by the PATCH change,
// which stores source's secret again, in the same transaction: while a
// trigger refuses revocations the change is refused and the sealed secret
// stays byte for byte the same. call makes an invocation that waits for a
// human unless a grant lets it through.
func requireChangeRevokes(t *testing.T, b *apptest.Bundle, path, source string, call func() *apptest.Response, rename, change map[string]any) {
	t.Helper()
	r := call()
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	g := approveWithGrant(t, b, r.Body["invocation_id"].(string), map[string]any{"count": 5, "minutes": 10})

	r = b.Do("PATCH", path, b.Owner(), rename)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, true, listGrant(t, b, g["id"].(string))["active"])

	before := sealedCredential(t, b, source)
	allow := refuseRevocations(t, b)
	r = b.Do("PATCH", path, b.Owner(), change)
	require.Equal(t, http.StatusInternalServerError, r.Status, string(r.Raw))
	require.Equal(t, before, sealedCredential(t, b, source), "the secret is unchanged")
	require.Equal(t, true, listGrant(t, b, g["id"].(string))["active"])
	allow()

	r = b.Do("PATCH", path, b.Owner(), change)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.NotEqual(t, before, sealedCredential(t, b, source))
	listed := listGrant(t, b, g["id"].(string))
	require.Equal(t, false, listed["active"])
	require.Equal(t, "credential", listed["revoke_reason"])
	revokes := b.AuditEntries("action=grant.revoke")
	require.Len(t, revokes, 1)
	require.Equal(t, g["id"], revokes[0]["target_id"])
	r = call()
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.Equal(t, "pending", r.Body["invocation"].(map[string]any)["status"])
}

// TestGrants_RevokedBeforeTheCallAsksAHuman: an invocation a grant let
// through but not yet called when the grant is revoked is not called: it
// waits for a human (require_approval, "grant revoked", a new approval
// request), and runs once one approves it.
func TestGrants_RevokedBeforeTheCallAsksAHuman(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{
		Outbox: outbox.Config{SyncWait: 200 * time.Millisecond},
		Worker: worker.Config{PauseRecheck: time.Second},
	})
	b.StoreSlackToken("xoxb-org")
	b.SetModes(map[string]string{"slack:send_message": "require_approval"})
	first := pendingInvoke(t, b, "C0123456789", "first")
	g := approveWithGrant(t, b, first, map[string]any{"count": 5, "minutes": 60})
	b.WaitStatus(first, invocation.StatusCompleted, 10*time.Second)
	posts := len(b.Slack.Posts())

	// Let through by the grant while the queue is paused: approved, not
	// called.
	r := b.Do("POST", "/v1/queues/pause", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "held"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	require.Equal(t, "approved", b.Invocation(id)["status"])
	require.Equal(t, g["id"], b.Invocation(id)["grant_id"])

	r = b.Do("DELETE", "/v1/grants/"+g["id"].(string), b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("POST", "/v1/queues/resume", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	b.WaitStatus(id, invocation.StatusPending, 10*time.Second)
	again := b.Invocation(id)
	require.Equal(t, "require_approval", again["mode"])
	require.NotNil(t, again["expires_at"])
	require.Equal(t, []any{"grant revoked"}, again["intent"].(map[string]any)["changes"])
	changed := lastEvent(t, b, id, "intent_changed")
	require.Contains(t, changed["reason"], "revoked (manual")
	require.Len(t, b.Slack.Posts(), posts, "nothing was sent after the revocation")

	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, invocation.StatusCompleted, 10*time.Second)
	require.Len(t, b.Slack.Posts(), posts+1, "sent once a human approved it")
}

// TestGrants_ToolRedefinedBeforeTheCallAsksAHuman: a connector tool
// redefined after its grant let an invocation through, before the call,
// sends that invocation to a human ("tool redefined") instead of calling
// the new tool under the old grant.
func TestGrants_ToolRedefinedBeforeTheCallAsksAHuman(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{
		ConnectorCacheTTL: time.Millisecond,
		Outbox:            outbox.Config{SyncWait: 200 * time.Millisecond},
		Worker:            worker.Config{PauseRecheck: time.Second},
	})
	_, source := createConnector(t, b, srv, nil)
	r := invokeTool(b, source, "create_note", map[string]any{"title": "first"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	first := r.Body["invocation_id"].(string)
	g := approveWithGrant(t, b, first, map[string]any{"count": 5, "minutes": 10})
	b.WaitStatus(first, invocation.StatusCompleted, 10*time.Second)
	calls := len(srv.toolCalls())

	r = b.Do("POST", "/v1/queues/pause", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = invokeTool(b, source, "create_note", map[string]any{"title": "held"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	require.Equal(t, g["id"], b.Invocation(id)["grant_id"])
	srv.addTool("create_note", "Create a note.",
		`{"type":"object","properties":{"title":{"type":"string"},"folder":{"type":"string"}},"required":["title"]}`, nil)
	time.Sleep(2 * time.Millisecond) // past the connector cache
	r = b.Do("POST", "/v1/queues/resume", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	b.WaitStatus(id, invocation.StatusPending, 10*time.Second)
	again := b.Invocation(id)
	require.Equal(t, "require_approval", again["mode"])
	require.Equal(t, []any{"tool redefined"}, again["intent"].(map[string]any)["changes"])
	require.Contains(t, lastEvent(t, b, id, "intent_changed")["reason"], "redefined since grant "+g["id"].(string))
	require.Len(t, srv.toolCalls(), calls, "the redefined tool was not called")
}

// TestGrants_PolicyAskingMoreApproversStopsThem: a grant made while one
// approval was enough lets nothing through once the approval policy asks
// several approvers of the tier each time (as no grant can be made then),
// and keeps its uses; with the policy back, it lets through again.
func TestGrants_PolicyAskingMoreApproversStopsThem(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	first := pendingInvoke(t, b, "C0123456789", "first")
	tier := b.Invocation(first)["risk_tier"].(string)
	g := approveWithGrant(t, b, first, map[string]any{"count": 2, "minutes": 10, "fixed": []string{"channel"}})
	grantID := g["id"].(string)

	r := b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]any{tier: 2}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	second := pendingInvoke(t, b, "C0123456789", "second")
	require.Nil(t, b.Invocation(second)["grant_id"], "two approvers are needed each time")
	require.Equal(t, float64(2), listGrant(t, b, grantID)["remaining"], "the use was given back")

	r = b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]any{}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "third"})
	require.Equal(t, http.StatusOK, r.Status, "the grant lets it through again: %s", r.Raw)
	require.Equal(t, grantID, r.Body["invocation"].(map[string]any)["grant_id"])
}

// TestGrants_ApprovalRequiredIsNeverGranted: an envelope that asks for a
// human (approval "required") waits for one even when the action already
// waits for approval and a grant covers it; the grant keeps its use and
// lets the next envelope that does not ask through.
func TestGrants_ApprovalRequiredIsNeverGranted(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	first := postEnvelope(t, b, envelope("grant-first", nil), http.StatusCreated)
	g := approveWithGrant(t, b, first["action_id"].(string), map[string]any{"count": 1, "minutes": 10})
	require.Equal(t, "automation", g["scope"])

	asked := postEnvelope(t, b, envelope("grant-asked", map[string]any{"approval": "required"}), http.StatusCreated)
	require.Equal(t, "pending", asked["invocation_status"], "it asked for a human")
	require.Equal(t, "required", asked["approval"])
	require.Equal(t, float64(1), listGrant(t, b, g["id"].(string))["remaining"])

	next := postEnvelope(t, b, envelope("grant-next", nil), http.StatusCreated)
	require.Equal(t, "grant", next["mode_source"], "the grant lets one that did not ask through")
}

// TestGrants_AskedAgainInvocationMakesOneGrant: an invocation approved
// with a grant and asked again before its call (its credential replaced,
// which also revoked the grant) cannot make a second grant (one per
// invocation): approving it again with a grant is 409 and changes nothing,
// not a 500; approved without one, it runs.
func TestGrants_AskedAgainInvocationMakesOneGrant(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	id := pendingInvoke(t, b, "C0123456789", "twice")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	first := approveWithGrant(t, b, id, map[string]any{"count": 1, "minutes": 10})
	waitHeld(t, b, id)
	b.StoreToken("slack", "xoxb-another", "")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/resume", b.Admin(), nil).Status)
	waitPendingAgain(t, b, id)

	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"mode": "once", "grant": map[string]any{"count": 1, "minutes": 10}})
	requireAPIError(t, r, http.StatusConflict, "conflict")
	require.Equal(t, "pending", b.Invocation(id)["status"], "nothing was approved")
	require.Equal(t, "credential", listGrant(t, b, first["id"].(string))["revoke_reason"])

	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)
}

// TestGrants_AreTheirUsers: a grant made on an invocation for one user
// lets through that user's invocations in the session only: another
// person acting in the same session (with their own credential) waits for
// a human.
func TestGrants_AreTheirUsers(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	invokeAs := func(user, text string) *apptest.Response {
		tok := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: apptest.Session, UserID: user})
		return b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", tok,
			map[string]any{"integration": "slack", "action": "send_message", "params": map[string]any{"channel": "C0123456789", "text": text}})
	}
	r := invokeAs("alice", "first")
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	g := approveWithGrant(t, b, r.Body["invocation_id"].(string), map[string]any{"count": 5, "minutes": 10})
	require.Equal(t, "alice", g["user_id"])

	r = invokeAs("bob", "not alice")
	require.Equal(t, http.StatusAccepted, r.Status, "another user's invocation waits: %s", r.Raw)
	require.Nil(t, r.Body["invocation"].(map[string]any)["grant_id"])
	r = invokeAs("", "nobody's")
	require.Equal(t, http.StatusAccepted, r.Status, "an invocation for no user waits: %s", r.Raw)

	r = invokeAs("alice", "alice again")
	require.Equal(t, http.StatusOK, r.Status, "the grant lets its user's through: %s", r.Raw)
	require.Equal(t, g["id"], r.Body["invocation"].(map[string]any)["grant_id"])
}

// TestGrants_OffboardedApproverRevokes: revoking a person's tokens by
// subject revokes the grants they made (their approvals given ahead), in
// the revocation's transaction and the audit trail, by the revoker;
// another approver's grant keeps letting invocations through.
func TestGrants_OffboardedApproverRevokes(t *testing.T) {
	t.Parallel()
	b := grantBundle(t)
	byAdmin := approveWithGrant(t, b, pendingInvoke(t, b, "C0000000001", "first"), map[string]any{"count": 5, "minutes": 60, "fixed": []string{"channel"}})
	require.Equal(t, "user-admin", byAdmin["created_by"])
	r := b.Do("POST", "/v1/invocations/"+pendingInvoke(t, b, "C0000000002", "second")+"/approve", b.Owner(),
		map[string]any{"mode": "once", "grant": map[string]any{"count": 5, "minutes": 60, "fixed": []string{"channel"}}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	byOwner := r.Body["grant"].(map[string]any)

	r = b.Do("POST", "/v1/revocations", b.Owner(), map[string]any{"subject": "user-admin"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	// Read as the owner: the admin's tokens are revoked.
	r = b.Do("GET", "/v1/grants", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	grants := map[any]map[string]any{}
	for _, g := range r.Body["grants"].([]any) {
		grants[g.(map[string]any)["id"]] = g.(map[string]any)
	}
	require.Equal(t, "offboarded", grants[byAdmin["id"]]["revoke_reason"])
	require.Equal(t, "user-owner", grants[byAdmin["id"]]["revoked_by"])
	require.Equal(t, false, grants[byAdmin["id"]]["active"])
	require.Equal(t, true, grants[byOwner["id"]]["active"])
	r = b.Do("GET", "/v1/audit?action=grant.revoke", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	entries := r.Body["entries"].([]any)
	require.Len(t, entries, 1)
	entry := entries[0].(map[string]any)
	require.Equal(t, byAdmin["id"], entry["target_id"])
	require.Equal(t, "user-owner", entry["actor"].(map[string]any)["subject"])
	require.Equal(t, "offboarded", entry["after"].(map[string]any)["revoke_reason"])

	pendingInvoke(t, b, "C0000000001", "its grant is revoked")
	r = b.Invoke("send_message", map[string]any{"channel": "C0000000002", "text": "the owner's grant holds"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
}
