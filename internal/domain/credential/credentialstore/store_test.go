package credentialstore_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestStore_PrefersUserCredential(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	pool := pgtest.Pool(t)
	store := credentialstore.New(pool, pool, box)

	_, err = store.Token(ctx, credential.Request{Org: "o", Integration: "linear"}, false)
	require.ErrorIs(t, err, errs.NotFound)

	_, err = store.Put(ctx, credential.Request{Org: "o", Integration: "linear"}, credential.Token{Value: "org-key", Kind: "api_key"}, "admin")
	require.NoError(t, err)
	_, err = store.Put(ctx, credential.Request{Org: "o", Integration: "linear", UserID: "u1"}, credential.Token{Value: "user-oauth", Kind: "oauth"}, "admin")
	require.NoError(t, err)

	tok, err := store.Token(ctx, credential.Request{Org: "o", Integration: "linear", UserID: "u1"}, false)
	require.NoError(t, err)
	require.Equal(t, credential.Token{Value: "user-oauth", Kind: "oauth"}, tok)
	tok, err = store.Token(ctx, credential.Request{Org: "o", Integration: "linear", UserID: "u2"}, false)
	require.NoError(t, err)
	require.Equal(t, "org-key", tok.Value, "falls back to the org's credential")
	_, err = store.Token(ctx, credential.Request{Org: "other", Integration: "linear"}, false)
	require.ErrorIs(t, err, errs.NotFound, "credentials are org-scoped")

	ids, err := store.Integrations(ctx, "o", "")
	require.NoError(t, err)
	require.Equal(t, []string{"linear"}, ids)

	other, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	fresh := pgtest.Pool(t)
	_, err = credentialstore.New(fresh, fresh, other).Token(ctx, credential.Request{Org: "o", Integration: "linear"}, false)
	require.ErrorIs(t, err, errs.NotFound, "a fresh database has nothing")
}

// TestStore_CachesByVersion checks decrypted tokens are served from the
// cache while the version the caller read is unchanged, and read afresh
// once it changes.
func TestStore_CachesByVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	pool := pgtest.Pool(t)
	store := credentialstore.New(pool, pool, box)
	req := credential.Request{Org: "o", Integration: "slack"}

	first, err := store.Put(ctx, req, credential.Token{Value: "xoxb-first"}, "admin")
	require.NoError(t, err)
	req.Version = first.UpdatedAt
	tok, err := store.Token(ctx, req, false)
	require.NoError(t, err)
	require.Equal(t, "xoxb-first", tok.Value)

	second, err := store.Put(ctx, credential.Request{Org: "o", Integration: "slack"}, credential.Token{Value: "xoxb-second"}, "admin")
	require.NoError(t, err)
	tok, err = store.Token(ctx, req, false)
	require.NoError(t, err)
	require.Equal(t, "xoxb-first", tok.Value, "the same version is served from the cache")
	tok, err = store.Token(ctx, req, true)
	require.NoError(t, err)
	require.Equal(t, "xoxb-second", tok.Value, "a refresh reads the row")

	req.Version = second.UpdatedAt
	tok, err = store.Token(ctx, req, false)
	require.NoError(t, err)
	require.Equal(t, "xoxb-second", tok.Value, "a new version is read afresh")
}

func TestStore_CheckKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	other, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)

	require.NoError(t, credentialstore.New(pool, pool, other).CheckKey(ctx), "no credentials: any key will do")

	store := credentialstore.New(pool, pool, box)
	_, err = store.Put(ctx, credential.Request{Org: "o", Integration: "slack"}, credential.Token{Value: "xoxb"}, "admin")
	require.NoError(t, err)
	require.NoError(t, store.CheckKey(ctx))

	err = credentialstore.New(pool, pool, other).CheckKey(ctx)
	require.ErrorIs(t, err, credential.ErrKeyChanged)
	require.ErrorContains(t, err, "slack of organization o")
}
