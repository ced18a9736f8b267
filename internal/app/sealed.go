package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/sealed/sealedstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

// sealedGroupsSQL groups the sealed values of every column of
// sealedstore.Columns by the key id their header names (NULL: none, a
// value from before keyrings), with how many and one of them, and what
// it is sealed with, to open. The invocations' params are read where
// they may be set (unfinished, or dead letters not discarded), through
// the partial indexes of those rows, not the whole table.
const sealedGroupsSQL = `
WITH v AS (
    SELECT 'credentials.sealed' AS col, sealed AS s, organization_id AS org, integration, user_id, NULL::uuid AS id FROM credentials
    UNION ALL
    SELECT 'webhooks.secret_sealed', secret_sealed, organization_id, '', '', id FROM webhooks
    UNION ALL
    SELECT 'action_invocations.params_sealed', params_sealed, organization_id, '', '', id FROM action_invocations
    WHERE params_sealed IS NOT NULL
      AND (status IN ('pending', 'approved', 'executing') OR (dead_lettered_at IS NOT NULL AND discarded_at IS NULL))
), k AS (
    SELECT v.*, CASE
        WHEN length(s) < 2 THEN NULL
        WHEN get_byte(s, 0) = 1 AND get_byte(s, 1) > 0 AND length(s) >= 2 + get_byte(s, 1)
            THEN encode(substring(s FROM 3 FOR get_byte(s, 1)), 'escape')
        END AS key_id
    FROM v
)
SELECT DISTINCT ON (col, key_id) col, key_id, count(*) OVER (PARTITION BY col, key_id), s, org, integration, user_id, id
FROM k ORDER BY col, key_id`

// sealedGroup is one column's values that name the same key (KeyID nil:
// none), how many, and one of them with what it is sealed with.
type sealedGroup struct {
	Column string
	KeyID  *string
	N      int64
	sealed []byte
	org    string
	// integration and user are a credential's; id is a webhook's or an
	// invocation's.
	integration, user string
	id                *uuid.UUID
}

// additional is the additional data g's value is sealed with: a
// credential's row key, a webhook's or an invocation's id.
func (g *sealedGroup) additional() []byte {
	if g.id != nil {
		return g.id[:]
	}
	return credentialstore.Additional(g.org, g.integration, g.user)
}

// unreadableSecrets returns the groups of stored sealed values that box
// cannot open, judged by one value of each: in one query, however many
// values there are, so that every start can afford it.
func unreadableSecrets(ctx context.Context, db dbutil.DB, box *secretbox.Box) ([]sealedGroup, error) {
	rows, err := db.Query(ctx, sealedGroupsSQL)
	if err != nil {
		return nil, fmt.Errorf("reading the stored secrets' keys: %w", err)
	}
	groups, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sealedGroup, error) {
		var g sealedGroup
		err := row.Scan(&g.Column, &g.KeyID, &g.N, &g.sealed, &g.org, &g.integration, &g.user, &g.id)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the stored secrets' keys: %w", err)
	}
	var out []sealedGroup
	for _, g := range groups {
		if _, err := box.Open(g.sealed, g.additional()); err != nil {
			out = append(out, g)
		}
	}
	return out, nil
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
			"List the key they were sealed with in secrets.keys again (then `outboxd secrets rotate` re-seals them), "+
			"or store those secrets again; `outboxd secrets status` counts them",
			"column", g.Column, "holds", holds, "count", g.N, "sealed_with", sealedWith, "secrets_keys", box.IDs())
	}
}
