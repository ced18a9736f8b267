package dbutil

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TenantRole is the database role the API runs its queries as: subject to
// the row-level security policies that show a session only the rows of the
// organization in its outboxd.org setting (migration 009).
const TenantRole = "outboxd_tenant"

type orgKey struct{}

// WithOrg returns a context whose database work, on a TenantPool, sees
// only the rows of org.
func WithOrg(ctx context.Context, org string) context.Context {
	return context.WithValue(ctx, orgKey{}, org)
}

// OrgFrom returns the organization WithOrg put in ctx, or "".
func OrgFrom(ctx context.Context) string {
	org, _ := ctx.Value(orgKey{}).(string)
	return org
}

// TenantPool opens a pool like base whose connections run as TenantRole
// and, whenever one is acquired, carry the organization of the acquiring
// context (WithOrg) in outboxd.org — an empty one when the context has
// none, which shows no organization's rows. The setting is changed only
// when it differs from the connection's last, so requests of one
// organization pay nothing for it.
func TenantPool(ctx context.Context, base *pgxpool.Config) (*pgxpool.Pool, error) {
	cfg := base.Copy()
	afterConnect := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if afterConnect != nil {
			if err := afterConnect(ctx, conn); err != nil {
				return err
			}
		}
		if _, err := conn.Exec(ctx, "SET ROLE "+TenantRole); err != nil {
			return fmt.Errorf("running as %s (created by `outboxd migrate up`; the database user must be a member of it): %w", TenantRole, err)
		}
		return nil
	}
	cfg.PrepareConn = func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		org := OrgFrom(ctx)
		data := conn.PgConn().CustomData()
		if current, ok := data["outboxd.org"].(string); ok && current == org {
			return true, nil
		}
		if _, err := conn.Exec(ctx, "SELECT set_config('outboxd.org', $1, false)", org); err != nil {
			return false, err
		}
		data["outboxd.org"] = org
		return true, nil
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}
