package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/sealed/sealedstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

// sealedValuesSQL reads the sealed values of every column of
// sealedstore.Columns with what each is sealed with, to open. The
// invocations' params are read where they may be set (unfinished, or
// dead letters not discarded), through the partial indexes of those rows,
// not the whole table.
const sealedValuesSQL = `
SELECT 'credentials.sealed', sealed, organization_id, integration, user_id, NULL::uuid FROM credentials
UNION ALL
SELECT 'webhooks.secret_sealed', secret_sealed, organization_id, '', '', id FROM webhooks
UNION ALL
SELECT 'webhooks.previous_secret_sealed', previous_secret_sealed, organization_id, '', '', id FROM webhooks
WHERE previous_secret_sealed IS NOT NULL
UNION ALL
SELECT 'action_invocations.params_sealed', params_sealed, organization_id, '', '', id FROM action_invocations
WHERE params_sealed IS NOT NULL
  AND (status IN ('pending', 'approved', 'executing') OR (dead_lettered_at IS NOT NULL AND discarded_at IS NULL))`

// sealedGroup is the values of one column that name the same key (KeyID
// nil: none) and that no key of the ring opens, and how many.
type sealedGroup struct {
	Column string
	KeyID  *string
	N      int64
}

// unreadableSecrets returns the groups of stored sealed values that box
// cannot open. Every value is opened, not one of each key id: values that
// name the same id may be sealed with different keys (secrets.key
// replaced rather than rotated, its id "default" alike before and after,
// or a key id reused), and one that opens says nothing of the others. It
// reads the values as one query streams them, holding none.
func unreadableSecrets(ctx context.Context, db dbutil.DB, box *secretbox.Box) ([]sealedGroup, error) {
	rows, err := db.Query(ctx, sealedValuesSQL)
	if err != nil {
		return nil, fmt.Errorf("reading the stored secrets' keys: %w", err)
	}
	defer rows.Close()
	var (
		out   []sealedGroup
		index = map[[2]string]int{}
	)
	for rows.Next() {
		var (
			column, org, integration, user string
			sealed                         []byte
			id                             *uuid.UUID
		)
		if err := rows.Scan(&column, &sealed, &org, &integration, &user, &id); err != nil {
			return nil, fmt.Errorf("reading the stored secrets' keys: %w", err)
		}
		additional := credentialstore.Additional(org, integration, user)
		if id != nil {
			additional = id[:]
		}
		if _, err := box.Open(sealed, additional); err == nil {
			continue
		}
		keyID, tagged := secretbox.SealedWith(sealed) // "" when untagged
		key := [2]string{column, keyID}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, sealedGroup{Column: column})
			if tagged {
				out[i].KeyID = &keyID
			}
		}
		out[i].N++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the stored secrets' keys: %w", err)
	}
	slices.SortFunc(out, func(a, b sealedGroup) int {
		return cmp.Or(cmp.Compare(a.Column, b.Column), cmp.Compare(ptrOr(a.KeyID), ptrOr(b.KeyID)))
	})
	return out, nil
}

// ptrOr is *s, or "" for nil.
func ptrOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// warnUnreadableSecrets logs a warning for each kind of stored secret
// that no key of secrets.keys opens (a key removed while values it sealed
// remained): every call that needs one fails until the key is listed
// again or the secrets are stored again. It names columns, counts and
// key ids, never a value.
func warnUnreadableSecrets(ctx context.Context, db dbutil.DB, box *secretbox.Box, logger *slog.Logger) {
	groups, err := unreadableSecrets(ctx, db, box)
	if err != nil {
		logger.WarnContext(ctx, "could not check that secrets.keys opens the stored secrets", "error", err)
		return
	}
	for _, g := range groups {
		sealedWith := "no key id (sealed before keyrings, with the secrets.key of then)"
		if g.KeyID != nil {
			sealedWith = fmt.Sprintf("key id %q", *g.KeyID)
		}
		holds := ""
		for _, c := range sealedstore.Columns {
			if c.Name == g.Column {
				holds = c.Holds
			}
		}
		logger.WarnContext(ctx, "stored secrets do not open with any key of secrets.keys: every call that needs one fails. "+
			"List the key they were sealed with in secrets.keys again (under any id; then `outboxd secrets rotate` re-seals them), "+
			"or store those secrets again; `outboxd secrets status` counts them",
			"column", g.Column, "holds", holds, "count", g.N, "sealed_with", sealedWith, "secrets_keys", box.IDs())
	}
}
