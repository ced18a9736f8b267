package previewstore_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/preview"
	"github.com/outboxd/outboxd/internal/domain/preview/previewstore"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestPut_WaitsForAnIntentChangeUnderWay: a rendering of the intent an
// edit is replacing, stored while the edit's transaction is still open
// (it has dropped the old preview already), waits for the edit and is
// then dropped: the preview never shows params that will not run.
func TestPut_WaitsForAnIntentChangeUnderWay(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	expires := time.Now().Add(time.Hour)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	created, err := invocationstore.New(client).CreateMany(ctx, tx, []*invocation.CreateParams{{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: "org-1", SessionID: "session-1", RequestedBy: "agent",
		Origin: "invoke", Integration: "slack", Action: "send_message", RiskLevel: "write",
		Mode: "require_approval", ModeSource: "inferred_default", Params: json.RawMessage(`{"channel":"C1"}`),
		ParamsHash: "h", Status: invocation.StatusPending, Approval: "auto", ExpiresAt: &expires,
		IntentDigest: "digest-before", Intent: json.RawMessage(`{}`),
	}})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	inv := created[0]

	// The edit: a new intent, the old preview dropped, not committed yet.
	edit, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = edit.Rollback(ctx) }()
	_, err = edit.Exec(ctx, `UPDATE action_invocations SET intent_digest = 'digest-after' WHERE id = $1`, inv.ID)
	require.NoError(t, err)
	_, err = edit.Exec(ctx, `DELETE FROM invocation_previews WHERE invocation_id = $1`, inv.ID)
	require.NoError(t, err)

	store := previewstore.New()
	stored := make(chan bool, 1)
	go func() {
		ok, err := store.Put(ctx, pool, "org-1", inv.ID, "digest-before", &preview.Record{Status: preview.StatusRendered, Note: "old params"})
		if err != nil {
			t.Error(err)
		}
		stored <- ok
	}()
	select {
	case ok := <-stored:
		require.False(t, ok, "a rendering of the old intent was stored while the edit was under way")
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, edit.Commit(ctx))
	select {
	case ok := <-stored:
		require.False(t, ok, "the rendering of the old intent is dropped")
	case <-time.After(10 * time.Second):
		t.Fatal("Put did not return after the edit committed")
	}
	_, found, err := store.Get(ctx, pool, "org-1", inv.ID)
	require.NoError(t, err)
	require.False(t, found, "no preview of params that will not run")
}
