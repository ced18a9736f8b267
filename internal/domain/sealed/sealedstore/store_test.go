package sealedstore_test

import (
	"cmp"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/sealed"
	"github.com/outboxd/outboxd/internal/domain/sealed/sealedstore"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// stored is one sealed value a test wrote: how to read it back from its
// row, the additional data it is bound to, and what it must open to.
type stored struct {
	what string
	// column is the column the value is in, when not its seed's.
	column     string
	read       func(t *testing.T) []byte
	additional []byte
	plain      string
}

// sealer seals plain for additional: with a keyring, or as before
// keyrings.
type sealer func(plain, additional []byte) []byte

// seeds write n sealed values into one column each, in organization org,
// the way outboxd's code seals them (the same additional data). Every
// column of sealedstore.Columns must have one: a column the rotation
// skipped is then found still sealed with the old key.
var seeds = map[string]func(t *testing.T, pool *pgxpool.Pool, org string, n int, seal sealer) []stored{
	"credentials.sealed": func(t *testing.T, pool *pgxpool.Pool, org string, n int, seal sealer) []stored {
		var out []stored
		for i := range n {
			integration, user := []string{"linear-", "connector:", "database:"}[i%3]+uuid.NewString(), ""
			if i%4 == 1 {
				user = fmt.Sprintf("u%d", i)
			}
			plain := fmt.Sprintf("token-%s-%d", org, i)
			ad := credentialstore.Additional(org, integration, user)
			_, err := pool.Exec(context.Background(), `INSERT INTO credentials (organization_id, integration, user_id, sealed, token_kind, created_by)
				VALUES ($1, $2, $3, $4, 'api_key', 'test')`, org, integration, user, seal([]byte(plain), ad))
			require.NoError(t, err)
			out = append(out, stored{what: "credential " + integration, additional: ad, plain: plain, read: func(t *testing.T) []byte {
				var b []byte
				require.NoError(t, pool.QueryRow(context.Background(),
					`SELECT sealed FROM credentials WHERE organization_id = $1 AND integration = $2 AND user_id = $3`, org, integration, user).Scan(&b))
				return b
			}})
		}
		return out
	},
	"webhooks.secret_sealed": func(t *testing.T, pool *pgxpool.Pool, org string, n int, seal sealer) []stored {
		var out []stored
		for i := range n {
			id := uuid.Must(uuid.NewV7())
			plain := fmt.Sprintf("whsec_%s_%d", org, i)
			_, err := pool.Exec(context.Background(), `INSERT INTO webhooks (id, organization_id, url, events, secret_sealed)
				VALUES ($1, $2, 'https://example.com/hook', '{}', $3)`, id, org, seal([]byte(plain), id[:]))
			require.NoError(t, err)
			out = append(out, stored{what: "webhook", additional: id[:], plain: plain, read: func(t *testing.T) []byte {
				var b []byte
				require.NoError(t, pool.QueryRow(context.Background(), `SELECT secret_sealed FROM webhooks WHERE id = $1`, id).Scan(&b))
				return b
			}})
		}
		return out
	},
	"webhooks.previous_secret_sealed": func(t *testing.T, pool *pgxpool.Pool, org string, n int, seal sealer) []stored {
		var out []stored
		for i := range n {
			id := uuid.Must(uuid.NewV7())
			plain, current := fmt.Sprintf("whsec_previous_%s_%d", org, i), fmt.Sprintf("whsec_current_%s_%d", org, i)
			// Sealed the way a rotation keeps the secret it replaces: as
			// secret_sealed, bound to the endpoint's id. (The endpoints of
			// the seed of webhooks.secret_sealed have none, which the
			// rotation passes over.)
			_, err := pool.Exec(context.Background(), `INSERT INTO webhooks (id, organization_id, url, events, secret_sealed, previous_secret_sealed, previous_until)
				VALUES ($1, $2, 'https://example.com/hook', '{}', $3, $4, now() + interval '1 day')`,
				id, org, seal([]byte(current), id[:]), seal([]byte(plain), id[:]))
			require.NoError(t, err)
			read := func(column string) func(t *testing.T) []byte {
				return func(t *testing.T) []byte {
					var b []byte
					require.NoError(t, pool.QueryRow(context.Background(), `SELECT `+column+` FROM webhooks WHERE id = $1`, id).Scan(&b))
					return b
				}
			}
			out = append(out,
				stored{what: "previous webhook secret", additional: id[:], plain: plain, read: read("previous_secret_sealed")},
				stored{what: "webhook secret with a previous one", column: "webhooks.secret_sealed", additional: id[:], plain: current, read: read("secret_sealed")})
		}
		return out
	},
	"action_invocations.params_sealed": func(t *testing.T, pool *pgxpool.Pool, org string, n int, seal sealer) []stored {
		var out []stored
		for i := range n {
			id := uuid.Must(uuid.NewV7())
			plain := fmt.Sprintf(`{"password":"p-%s-%d"}`, org, i)
			_, err := pool.Exec(context.Background(), `INSERT INTO action_invocations (id, organization_id, requested_by, origin, integration, action,
				risk_level, mode, mode_source, params, params_hash, status, params_sealed)
				VALUES ($1, $2, 'agent', 'invoke', 'slack', 'send_message', 'write', 'require_approval', 'org_default',
				'{"password":"[REDACTED]"}', 'h', 'pending', $3)`, id, org, seal([]byte(plain), id[:]))
			require.NoError(t, err)
			// One without sealed params, which the rotation passes over.
			_, err = pool.Exec(context.Background(), `INSERT INTO action_invocations (id, organization_id, requested_by, origin, integration, action,
				risk_level, mode, mode_source, params, params_hash, status)
				VALUES ($1, $2, 'agent', 'invoke', 'slack', 'send_message', 'write', 'allow', 'org_default', '{}', 'h', 'approved')`,
				uuid.Must(uuid.NewV7()), org)
			require.NoError(t, err)
			out = append(out, stored{what: "invocation params", additional: id[:], plain: plain, read: func(t *testing.T) []byte {
				var b []byte
				require.NoError(t, pool.QueryRow(context.Background(), `SELECT params_sealed FROM action_invocations WHERE id = $1`, id).Scan(&b))
				return b
			}})
		}
		return out
	},
}

// sealLegacy seals as secretbox did before keyrings: nonce, ciphertext and
// tag, no key id.
func sealLegacy(t *testing.T, keyBase64 string) sealer {
	key, err := base64.StdEncoding.DecodeString(keyBase64)
	require.NoError(t, err)
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	aead, err := cipher.NewGCM(block)
	require.NoError(t, err)
	return func(plain, additional []byte) []byte {
		nonce := make([]byte, aead.NonceSize())
		_, err := rand.Read(nonce)
		require.NoError(t, err)
		return aead.Seal(nonce, nonce, plain, additional)
	}
}

func ring(t *testing.T, keys ...secretbox.Key) *secretbox.Box {
	t.Helper()
	box, err := secretbox.NewRing(keys)
	require.NoError(t, err)
	return box
}

func TestColumns_AreEverySealedColumnOfTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	store := sealedstore.New(pool, ring(t, secretbox.Key{ID: "k", Secret: secretbox.NewKey()}))

	unlisted, err := store.Unlisted(ctx)
	require.NoError(t, err)
	require.Empty(t, unlisted)
	var names []string
	for _, c := range sealedstore.Columns {
		names = append(names, c.Name)
		require.Contains(t, seeds, c.Name, "the test seeds every column the rotation knows")
		require.NotEmpty(t, c.Holds)
	}
	require.Len(t, seeds, len(sealedstore.Columns))
	require.Contains(t, names, "credentials.sealed")

	// A sealed column the rotation does not know stops it before it
	// re-seals anything.
	_, err = pool.Exec(ctx, `ALTER TABLE slack_settings ADD COLUMN token_sealed bytea`)
	require.NoError(t, err)
	unlisted, err = store.Unlisted(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"slack_settings.token_sealed"}, unlisted)
	_, err = store.Rotate(ctx, 0, nil)
	require.ErrorContains(t, err, "slack_settings.token_sealed")
}

// TestStore_Rotate: values of every column, of several organizations,
// sealed before keyrings and with the old key's id, are all re-sealed with
// the new primary in batches and open to what they held with the new key
// alone; a second run re-seals nothing.
func TestStore_Rotate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	oldKey, newKey := secretbox.NewKey(), secretbox.NewKey()
	before := ring(t, secretbox.Key{ID: secretbox.DefaultKeyID, Secret: oldKey})
	during := ring(t, secretbox.Key{ID: "2026-11", Secret: newKey}, secretbox.Key{ID: secretbox.DefaultKeyID, Secret: oldKey})
	after := ring(t, secretbox.Key{ID: "2026-11", Secret: newKey})

	var all []stored
	perColumn, onNew := map[string]int{}, map[string]int{}
	for name, seed := range seeds {
		for _, org := range []string{"org-a", "org-b"} {
			legacy := seed(t, pool, org, 4, sealLegacy(t, oldKey))
			tagged := seed(t, pool, org, 3, before.Seal)
			current := seed(t, pool, org, 1, during.Seal) // sealed by a process already on the new key
			all = slices.Concat(all, legacy, tagged, current)
			for _, s := range slices.Concat(legacy, tagged) {
				perColumn[cmp.Or(s.column, name)]++
			}
			for _, s := range current {
				onNew[cmp.Or(s.column, name)]++
			}
		}
	}
	// One stored through the credential store, read through it at the end.
	_, err := credentialstore.New(pool, pool, before).Put(ctx, credential.Request{Org: "org-a", Integration: "github"}, credential.Token{Value: "ghp-1"}, "admin")
	require.NoError(t, err)
	perColumn["credentials.sealed"]++
	// What no key of the ring opens is counted and left alone.
	stranger := seeds["credentials.sealed"](t, pool, "org-c", 1, ring(t, secretbox.Key{ID: "lost", Secret: secretbox.NewKey()}).Seal)[0]
	strangerBefore := stranger.read(t)

	store := sealedstore.New(pool, during)
	status, err := store.Status(ctx, 0)
	require.NoError(t, err)
	for _, c := range status {
		require.Equal(t, map[string]int{secretbox.DefaultKeyID: perColumn[c.Column]}, c.Others, c.Column)
	}

	var progress []sealedstore.Count
	counts, err := store.Rotate(ctx, 3, func(c sealedstore.Count) { progress = append(progress, c) })
	require.NoError(t, err)
	require.Len(t, counts, len(sealedstore.Columns))
	for i, c := range counts {
		require.Equal(t, sealedstore.Columns[i].Name, c.Column)
		require.Equal(t, perColumn[c.Column], c.Resealed, c.Column)
		require.Zero(t, c.Changed, c.Column)
		unreadable := 0
		if c.Column == "credentials.sealed" {
			unreadable = 1
		}
		require.Equal(t, unreadable, c.Unreadable, c.Column)
		require.Equal(t, perColumn[c.Column]+onNew[c.Column]+unreadable, c.Rows, c.Column, "and those already on the new key")
	}
	require.Greater(t, len(progress), 3*len(sealedstore.Columns), "progress after every batch of 3")
	require.Equal(t, stranger.read(t), strangerBefore)

	// Counted by organization and kind, from the key that opened them.
	byOrg := sealedstore.ByOrg(counts)
	require.Len(t, byOrg, 3)
	for _, org := range []string{"org-a", "org-b"} {
		o := byOrg[org]
		credentials := 3
		if org == "org-a" {
			credentials++ // stored through the credential store
		}
		require.Equal(t, map[string]int{
			sealedstore.KindCredentials: credentials, sealedstore.KindConnectors: 2, sealedstore.KindDatabases: 2,
			sealedstore.KindWebhooks: 21, sealedstore.KindInvocationParams: 7, // webhooks: 7 secrets, 7 with a previous one, 7 previous
		}, o.Resealed, org)
		require.Equal(t, map[string]int{secretbox.DefaultKeyID: credentials + 32}, o.From, org)
		require.Zero(t, o.Unreadable+o.Changed, org)
	}
	require.Equal(t, 1, byOrg["org-c"].Unreadable)
	require.Empty(t, byOrg["org-c"].Resealed)

	// Recorded in the audit trail of each organization re-sealed, as the
	// operator, with key ids and counts and never a key.
	afterStatus, err := store.Status(ctx, 0)
	require.NoError(t, err)
	operator := audit.Actor{Subject: "ops", Kind: audit.KindOperator, ClientAddr: "host:bastion"}
	trail := audit.New(pool)
	orgs, err := sealed.Record(ctx, trail, &sealed.Rotation{Actor: operator, Primary: "2026-11", Rotated: counts, Status: afterStatus})
	require.NoError(t, err)
	require.Equal(t, []string{"org-a", "org-b"}, orgs)
	entries, _, err := trail.List(ctx, "org-a", &audit.Filter{Action: "secrets"})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	e := entries[0]
	require.Equal(t, sealed.ActionRotate, e.Action)
	require.Equal(t, operator, e.Actor)
	require.Equal(t, "secrets_key", e.TargetType)
	require.Equal(t, "2026-11", e.TargetID)
	require.JSONEq(t, `{"key_ids":{"default":36}}`, string(e.Before))
	require.JSONEq(t, `{"key_id":"2026-11","resealed":{"credentials":4,"connectors":2,"databases":2,"webhooks":21,"invocation_params":7},
		"resealed_total":36,"changed_meanwhile":0,"unreadable":0,"remaining_on_other_keys":0,"complete":true}`, string(e.After))
	raw, err := json.Marshal(e)
	require.NoError(t, err)
	for _, key := range []string{oldKey, newKey} {
		require.NotContains(t, string(raw), key)
	}
	none, _, err := trail.List(ctx, "org-c", &audit.Filter{})
	require.NoError(t, err)
	require.Empty(t, none, "nothing of org-c was re-sealed")

	for _, s := range all {
		sealed := s.read(t)
		id, tagged := secretbox.SealedWith(sealed)
		require.True(t, tagged, s.what)
		require.Equal(t, "2026-11", id, s.what)
		plain, err := after.Open(sealed, s.additional)
		require.NoError(t, err, "%s opens with the new key alone", s.what)
		require.Equal(t, s.plain, string(plain), s.what)
		_, err = before.Open(sealed, s.additional)
		require.ErrorIs(t, err, secretbox.ErrOpen, "%s no longer needs the old key", s.what)
	}

	status, err = store.Status(ctx, 2)
	require.NoError(t, err)
	for _, c := range status {
		require.Zero(t, c.Remaining(), c.Column)
	}

	again, err := store.Rotate(ctx, 0, nil)
	require.NoError(t, err)
	for _, c := range again {
		require.Zero(t, c.Resealed, "a second run re-seals nothing: %s", c.Column)
	}
	orgs, err = sealed.Record(ctx, trail, &sealed.Rotation{Actor: operator, Primary: "2026-11", Rotated: again})
	require.NoError(t, err)
	require.Empty(t, orgs, "a run that re-seals nothing records nothing")

	// The stores' readers open them with the old key gone from the ring.
	creds := credentialstore.New(pool, pool, after)
	require.ErrorIs(t, creds.CheckKey(ctx), credential.ErrKeyChanged, "the stranger is the newest")
	_, err = pool.Exec(ctx, `DELETE FROM credentials WHERE organization_id = 'org-c'`)
	require.NoError(t, err)
	require.NoError(t, creds.CheckKey(ctx))
	tok, err := creds.Token(ctx, credential.Request{Org: "org-a", Integration: "github"}, false)
	require.NoError(t, err)
	require.Equal(t, "ghp-1", tok.Value)
}

// TestStore_RotateLeavesWhatTheDaemonWritesMeanwhile: a credential stored
// again between the rotation's read and its swap keeps the value stored,
// not the older one re-sealed; the rotation counts it, Status shows it
// still on the key its writer sealed with, and the next run re-seals it.
func TestStore_RotateLeavesWhatTheDaemonWritesMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	oldKey, newKey := secretbox.NewKey(), secretbox.NewKey()
	before := ring(t, secretbox.Key{ID: secretbox.DefaultKeyID, Secret: oldKey})
	during := ring(t, secretbox.Key{ID: "new", Secret: newKey}, secretbox.Key{ID: secretbox.DefaultKeyID, Secret: oldKey})

	// A process not yet restarted with the new key still seals with the
	// old one.
	daemon := credentialstore.New(pool, pool, before)
	for _, integration := range []string{"a", "b"} {
		_, err := daemon.Put(ctx, credential.Request{Org: "o", Integration: integration}, credential.Token{Value: integration + "-1"}, "admin")
		require.NoError(t, err)
	}
	store := sealedstore.New(pool, during)
	counts, err := store.Rotate(ctx, 1, func(c sealedstore.Count) {
		if c.Column == "credentials.sealed" && c.Rows == 1 {
			// "b" is read and about to be swapped.
			_, err := daemon.Put(ctx, credential.Request{Org: "o", Integration: "b"}, credential.Token{Value: "b-2"}, "admin")
			require.NoError(t, err)
		}
	})
	require.NoError(t, err)
	require.Equal(t, 1, counts[0].Resealed)
	require.Equal(t, 1, counts[0].Changed)
	require.Equal(t, 1, counts[0].Orgs["o"].Changed)
	require.Equal(t, map[string]int{sealedstore.KindCredentials: 1}, counts[0].Orgs["o"].Resealed)

	reader := credentialstore.New(pool, pool, during)
	tok, err := reader.Token(ctx, credential.Request{Org: "o", Integration: "b"}, true)
	require.NoError(t, err)
	require.Equal(t, "b-2", tok.Value, "the value stored meanwhile is kept")

	status, err := store.Status(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, map[string]int{secretbox.DefaultKeyID: 1}, status[0].Others)

	counts, err = store.Rotate(ctx, 0, nil)
	require.NoError(t, err)
	require.Equal(t, 1, counts[0].Resealed)
	tok, err = credentialstore.New(pool, pool, ring(t, secretbox.Key{ID: "new", Secret: newKey})).Token(ctx, credential.Request{Org: "o", Integration: "b"}, true)
	require.NoError(t, err)
	require.Equal(t, "b-2", tok.Value)
}

// TestStore_EndedPreviousWebhookSecret: a webhook's previous signing
// secret whose overlap has ended signs nothing and is deleted by the next
// retention run: the rotation neither re-seals it nor counts it
// unreadable when its key has left the ring.
func TestStore_EndedPreviousWebhookSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	key := secretbox.NewKey()
	box := ring(t, secretbox.Key{ID: "2026-11", Secret: key})
	lost := ring(t, secretbox.Key{ID: "lost", Secret: secretbox.NewKey()})
	id := uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO webhooks (id, organization_id, url, events, secret_sealed, previous_secret_sealed, previous_until)
		VALUES ($1, 'org-a', 'https://example.com/hook', '{}', $2, $3, now() - interval '1 minute')`,
		id, box.Seal([]byte("whsec_current"), id[:]), lost.Seal([]byte("whsec_previous"), id[:]))
	require.NoError(t, err)

	store := sealedstore.New(pool, box)
	status, err := store.Status(ctx, 0)
	require.NoError(t, err)
	counts, err := store.Rotate(ctx, 0, nil)
	require.NoError(t, err)
	for _, c := range slices.Concat(status, counts) {
		require.Zero(t, c.Unreadable, c.Column)
		require.Zero(t, c.Resealed, c.Column)
	}
}
