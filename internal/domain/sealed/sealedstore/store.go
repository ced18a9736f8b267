// Package sealedstore knows every column of values outboxd stores sealed
// with its keyring (internal/platform/secretbox), in every organization,
// and re-seals them with the ring's primary key: `outboxd secrets rotate`.
// It works through the owner's pool, which row-level security does not
// limit, in batches of one short statement each, while the daemon runs: a
// value is swapped only if it is still the one read (compare-and-swap),
// so a secret the daemon stores meanwhile is never overwritten with the
// older one.
package sealedstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

// DefaultBatch is how many rows a batch reads and swaps.
const DefaultBatch = 500

// Column is one column of sealed values.
type Column struct {
	// Name is table.column.
	Name string
	// Holds says what the values are, for people.
	Holds string
	// pass reads the column from its start, in batches of n, and hands each
	// batch to fn, which answers the values to swap (old → new); pass
	// swaps those still as read and tells fn's next call how many it did.
	pass func(ctx context.Context, db dbsqlc.DBTX, n int, fn batchFunc) error
}

// value is one sealed value with the additional data it is sealed with,
// its organization and its kind (Kinds).
type value struct {
	org, kind          string
	sealed, additional []byte
}

// Kinds of sealed values, by which a rotation counts an organization's
// re-sealed values: the audit trail's entry names them.
const (
	KindCredentials      = "credentials"
	KindConnectors       = "connectors"
	KindDatabases        = "databases"
	KindWebhooks         = "webhooks"
	KindInvocationParams = "invocation_params"
)

// credentialKind tells a connector's or a database's secret from a
// provider credential by the integration it is stored under.
func credentialKind(integration string) string {
	switch {
	case strings.HasPrefix(integration, "connector:"):
		return KindConnectors
	case strings.HasPrefix(integration, "database:"):
		return KindDatabases
	}
	return KindCredentials
}

// batchFunc is given a batch of values and which of the previous batch's
// swaps were done (indices into its values), and returns the swaps of this
// one. Its last call has no values.
type batchFunc func(values []value, swappedBefore []int) []swap

// swap replaces the sealed value of batch[i] with sealed.
type swap struct {
	i      int
	sealed []byte
}

// Columns are every column of sealed values: what a rotation re-seals.
// A column added to the schema (a bytea column named like "%sealed%") must
// be added here: Unlisted finds the ones missing, and the rotation refuses
// to start while there are any.
var Columns = []Column{
	{
		Name:  "credentials.sealed",
		Holds: "provider credentials, MCP connectors' and databases' secrets",
		pass: pass(
			func(ctx context.Context, db dbsqlc.DBTX, from credentialKey, n int32) ([]row[credentialKey], error) {
				rows, err := q.SealedCredentialsFrom(ctx, db, dbsqlc.SealedCredentialsFromParams{
					OrganizationID: from.org, Integration: from.integration, UserID: from.user, MaxRows: n,
				})
				out := make([]row[credentialKey], len(rows))
				for i, r := range rows {
					out[i] = row[credentialKey]{
						key:   credentialKey{r.OrganizationID, r.Integration, r.UserID},
						value: value{r.OrganizationID, credentialKind(r.Integration), r.Sealed, credentialstore.Additional(r.OrganizationID, r.Integration, r.UserID)},
					}
				}
				return out, err
			},
			func(ctx context.Context, db dbsqlc.DBTX, keys []credentialKey, old, sealed [][]byte) ([]credentialKey, error) {
				p := dbsqlc.SealedCredentialsSwapParams{OldSealed: old, NewSealed: sealed}
				for _, k := range keys {
					p.OrganizationIds = append(p.OrganizationIds, k.org)
					p.Integrations = append(p.Integrations, k.integration)
					p.UserIds = append(p.UserIds, k.user)
				}
				rows, err := q.SealedCredentialsSwap(ctx, db, p)
				done := make([]credentialKey, len(rows))
				for i, r := range rows {
					done[i] = credentialKey{r.OrganizationID, r.Integration, r.UserID}
				}
				return done, err
			}),
	},
	{
		Name:  "webhooks.secret_sealed",
		Holds: "webhook signing secrets",
		pass: pass(
			func(ctx context.Context, db dbsqlc.DBTX, from uuid.UUID, n int32) ([]row[uuid.UUID], error) {
				rows, err := q.SealedWebhooksFrom(ctx, db, dbsqlc.SealedWebhooksFromParams{ID: from, MaxRows: n})
				out := make([]row[uuid.UUID], len(rows))
				for i, r := range rows {
					// Sealed bound to the endpoint's id (internal/domain/relay/webhook).
					out[i] = row[uuid.UUID]{key: r.ID, value: value{r.OrganizationID, KindWebhooks, r.SecretSealed, r.ID[:]}}
				}
				return out, err
			},
			func(ctx context.Context, db dbsqlc.DBTX, ids []uuid.UUID, old, sealed [][]byte) ([]uuid.UUID, error) {
				return q.SealedWebhooksSwap(ctx, db, dbsqlc.SealedWebhooksSwapParams{Ids: ids, OldSealed: old, NewSealed: sealed})
			}),
	},
	{
		Name:  "webhooks.previous_secret_sealed",
		Holds: "webhook signing secrets replaced by a rotation, while they still sign",
		pass: pass(
			func(ctx context.Context, db dbsqlc.DBTX, from uuid.UUID, n int32) ([]row[uuid.UUID], error) {
				rows, err := q.SealedWebhooksPreviousFrom(ctx, db, dbsqlc.SealedWebhooksPreviousFromParams{ID: from, MaxRows: n})
				out := make([]row[uuid.UUID], len(rows))
				for i, r := range rows {
					// Sealed like secret_sealed: bound to the endpoint's id.
					out[i] = row[uuid.UUID]{key: r.ID, value: value{r.OrganizationID, KindWebhooks, r.PreviousSecretSealed, r.ID[:]}}
				}
				return out, err
			},
			func(ctx context.Context, db dbsqlc.DBTX, ids []uuid.UUID, old, sealed [][]byte) ([]uuid.UUID, error) {
				return q.SealedWebhooksPreviousSwap(ctx, db, dbsqlc.SealedWebhooksPreviousSwapParams{Ids: ids, OldSealed: old, NewSealed: sealed})
			}),
	},
	{
		Name:  "action_invocations.params_sealed",
		Holds: "the exact params of unfinished invocations whose shown params are redacted",
		pass: pass(
			func(ctx context.Context, db dbsqlc.DBTX, from uuid.UUID, n int32) ([]row[uuid.UUID], error) {
				rows, err := q.SealedParamsFrom(ctx, db, dbsqlc.SealedParamsFromParams{ID: from, MaxRows: n})
				out := make([]row[uuid.UUID], len(rows))
				for i, r := range rows {
					// Sealed bound to the invocation's id (outbox, Submit).
					out[i] = row[uuid.UUID]{key: r.ID, value: value{r.OrganizationID, KindInvocationParams, r.ParamsSealed, r.ID[:]}}
				}
				return out, err
			},
			func(ctx context.Context, db dbsqlc.DBTX, ids []uuid.UUID, old, sealed [][]byte) ([]uuid.UUID, error) {
				return q.SealedParamsSwap(ctx, db, dbsqlc.SealedParamsSwapParams{Ids: ids, OldSealed: old, NewSealed: sealed})
			}),
	},
}

var q = dbsqlc.New()

type credentialKey struct{ org, integration, user string }

// row is one row of a column: its key, by which the column is read in
// order, and its value.
type row[K comparable] struct {
	key K
	value
}

// pass returns a Column's pass over a column whose rows are keyed by K
// (the zero K sorting first): from reads at most n rows with keys ≥ its
// cursor, in key order; swap replaces the values of keys that are still
// old.
func pass[K comparable](
	from func(ctx context.Context, db dbsqlc.DBTX, cursor K, n int32) ([]row[K], error),
	swapFn func(ctx context.Context, db dbsqlc.DBTX, keys []K, old, sealed [][]byte) ([]K, error),
) func(context.Context, dbsqlc.DBTX, int, batchFunc) error {
	return func(ctx context.Context, db dbsqlc.DBTX, n int, fn batchFunc) error {
		var (
			cursor  K
			first   = true
			swapped []int
		)
		for {
			rows, err := from(ctx, db, cursor, int32(n+1))
			if err != nil {
				return fmt.Errorf("reading: %w", err)
			}
			if !first && len(rows) > 0 && rows[0].key == cursor {
				rows = rows[1:] // the cursor's own row, done in the batch before
			}
			rows = rows[:min(len(rows), n)]
			values := make([]value, len(rows))
			for i, r := range rows {
				values[i] = r.value
			}
			swaps := fn(values, swapped)
			if len(rows) == 0 {
				return nil
			}
			swapped = nil
			if len(swaps) > 0 {
				keys := make([]K, len(swaps))
				index := make(map[K]int, len(swaps))
				old, sealed := make([][]byte, len(swaps)), make([][]byte, len(swaps))
				for j, s := range swaps {
					keys[j], old[j], sealed[j] = rows[s.i].key, rows[s.i].sealed, s.sealed
					index[rows[s.i].key] = s.i
				}
				done, err := retried(ctx, func() ([]K, error) { return swapFn(ctx, db, keys, old, sealed) })
				if err != nil {
					return fmt.Errorf("re-sealing: %w", err)
				}
				for _, k := range done {
					swapped = append(swapped, index[k])
				}
			}
			cursor, first = rows[len(rows)-1].key, false
		}
	}
}

// retried runs a swap again when Postgres broke a deadlock with it (the
// daemon locking the same rows in another order); the swap is a
// compare-and-swap, so running it again is safe.
func retried[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		n, err := fn()
		var pgErr *pgconn.PgError
		if err == nil || attempt == 5 || !errors.As(err, &pgErr) || (pgErr.Code != "40P01" && pgErr.Code != "40001") || ctx.Err() != nil {
			return n, err
		}
	}
}

// Store re-seals and counts the sealed values of every organization.
type Store struct {
	db  dbsqlc.DBTX
	box *secretbox.Box
}

// New returns a Store working through owner, a pool that row-level
// security does not limit, with box's ring.
func New(owner dbsqlc.DBTX, box *secretbox.Box) *Store {
	return &Store{db: owner, box: box}
}

// Count is what a pass over one column found.
type Count struct {
	Column string
	// Rows is how many sealed values were read.
	Rows int
	// Resealed is how many were re-sealed with the primary key.
	Resealed int
	// Changed is how many of those to re-seal were written by someone
	// else between the read and the swap, and left as written.
	Changed int
	// Unreadable is how many open with no key of the ring.
	Unreadable int
	// Others counts the values sealed other than as the primary key seals
	// now, by the id of the key that opens them (after a rotation: those
	// written meanwhile by a process whose primary is another key).
	Others map[string]int
	// Orgs are the counts by organization, of the organizations with a
	// value re-sealed, changed meanwhile, unreadable or on another key.
	Orgs map[string]*OrgCount
}

// OrgCount is what a pass found of one organization's values.
type OrgCount struct {
	// Resealed counts the values re-sealed, by kind (KindCredentials...).
	Resealed map[string]int
	// From counts the values re-sealed by the id of the key that opened
	// them.
	From map[string]int
	// Changed and Unreadable are Count's, of the organization.
	Changed, Unreadable int
	// Remaining is how many values still need another key than the
	// primary (Status).
	Remaining int
}

func (c *Count) org(org string) *OrgCount {
	if c.Orgs == nil {
		c.Orgs = map[string]*OrgCount{}
	}
	o := c.Orgs[org]
	if o == nil {
		o = &OrgCount{Resealed: map[string]int{}, From: map[string]int{}}
		c.Orgs[org] = o
	}
	return o
}

// ByOrg adds up the counts of every column by organization.
func ByOrg(counts []Count) map[string]*OrgCount {
	out := map[string]*OrgCount{}
	for _, c := range counts {
		for org, o := range c.Orgs {
			sum := out[org]
			if sum == nil {
				sum = &OrgCount{Resealed: map[string]int{}, From: map[string]int{}}
				out[org] = sum
			}
			for k, n := range o.Resealed {
				sum.Resealed[k] += n
			}
			for k, n := range o.From {
				sum.From[k] += n
			}
			sum.Changed += o.Changed
			sum.Unreadable += o.Unreadable
			sum.Remaining += o.Remaining
		}
	}
	return out
}

// Remaining is how many of the column's values still need a key other
// than the primary.
func (c Count) Remaining() int {
	n := 0
	for _, v := range c.Others {
		n += v
	}
	return n
}

// Unlisted returns the columns of the schema that look like sealed values
// (bytea, named like "%sealed%") and are not in Columns.
func (s *Store) Unlisted(ctx context.Context) ([]string, error) {
	names, err := q.SealedColumns(ctx, s.db)
	if err != nil {
		return nil, fmt.Errorf("listing the schema's sealed columns: %w", err)
	}
	return slices.DeleteFunc(names, func(name string) bool {
		return slices.ContainsFunc(Columns, func(c Column) bool { return c.Name == name })
	}), nil
}

// Rotate re-seals, column by column, every value not sealed as the primary
// key seals now, batch rows at a time (DefaultBatch when 0), calling
// progress after each batch with the column's counts so far (once the
// next batch has been read, before it is re-sealed). A second run
// re-seals nothing. It refuses to start while Unlisted
// finds a column. Its counts leave Others empty: Status, run after it,
// says what remains. Its counts by organization (Orgs) say what was
// re-sealed of each, of which kinds, from which keys.
func (s *Store) Rotate(ctx context.Context, batch int, progress func(Count)) ([]Count, error) {
	unlisted, err := s.Unlisted(ctx)
	if err != nil {
		return nil, err
	}
	if len(unlisted) > 0 {
		return nil, fmt.Errorf("the database has sealed columns this outboxd does not know (%v): rotate with the outboxd that migrated it", unlisted)
	}
	var counts []Count
	for _, col := range Columns {
		c := Count{Column: col.Name, Others: map[string]int{}, Orgs: map[string]*OrgCount{}}
		// The batch before: its values, and the key opening each to swap.
		var (
			before  []value
			pending map[int]string
		)
		err := col.pass(ctx, s.db, batchSize(batch), func(values []value, swapped []int) []swap {
			c.Resealed += len(swapped)
			c.Changed += len(pending) - len(swapped)
			for _, i := range swapped {
				o := c.org(before[i].org)
				o.Resealed[before[i].kind]++
				o.From[pending[i]]++
				delete(pending, i)
			}
			for i := range pending {
				c.org(before[i].org).Changed++
			}
			if progress != nil && c.Rows > 0 {
				progress(c)
			}
			var swaps []swap
			pending = map[int]string{}
			for i, v := range values {
				c.Rows++
				plain, how, err := s.box.OpenKey(v.sealed, v.additional)
				switch {
				case err != nil:
					c.Unreadable++
					c.org(v.org).Unreadable++
				case !how.Current:
					swaps = append(swaps, swap{i: i, sealed: s.box.Seal(plain, v.additional)})
					pending[i] = how.KeyID
				}
			}
			before = values
			return swaps
		})
		if err != nil {
			return counts, fmt.Errorf("%s: %w", col.Name, err)
		}
		counts = append(counts, c)
	}
	return counts, nil
}

// Status counts, column by column, the values sealed other than as the
// primary key seals now, by the key that opens them, and those that open
// with none. It writes nothing.
func (s *Store) Status(ctx context.Context, batch int) ([]Count, error) {
	var counts []Count
	for _, col := range Columns {
		c := Count{Column: col.Name, Others: map[string]int{}, Orgs: map[string]*OrgCount{}}
		err := col.pass(ctx, s.db, batchSize(batch), func(values []value, _ []int) []swap {
			for _, v := range values {
				c.Rows++
				_, how, err := s.box.OpenKey(v.sealed, v.additional)
				switch {
				case err != nil:
					c.Unreadable++
					c.org(v.org).Unreadable++
				case !how.Current:
					c.Others[how.KeyID]++
					c.org(v.org).Remaining++
				}
			}
			return nil
		})
		if err != nil {
			return counts, fmt.Errorf("%s: %w", col.Name, err)
		}
		counts = append(counts, c)
	}
	return counts, nil
}

func batchSize(n int) int {
	if n > 0 {
		return n
	}
	return DefaultBatch
}
