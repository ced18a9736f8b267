package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/user"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/sealed"
	"github.com/outboxd/outboxd/internal/domain/sealed/sealedstore"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/migrations"
)

func newSecretsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Rotate the keys that seal stored secrets (secrets.key, secrets.keys)",
		Long: "The stored secrets of every organization (credentials, MCP connectors' and databases' secrets,\n" +
			"webhook signing secrets, invocations' sealed params) are sealed with the first key of\n" +
			"secrets.keys and open with any of them. `rotate` re-seals those sealed with another key with\n" +
			"the first, while outboxd runs; `status` counts them. See docs/operations.md, \"Rotating secrets.key\".",
	}
	cmd.PersistentFlags().Int("batch", sealedstore.DefaultBatch, "rows read and re-sealed per statement")
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Re-seal every stored secret not sealed with the first key of secrets.keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withSealed(cmd, func(pool *pgxpool.Pool, store *sealedstore.Store, box *secretbox.Box, batch int) error {
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "re-sealing with key %q (secrets.keys: %s)\n", box.Primary(), strings.Join(box.IDs(), ", "))
				counts, err := store.Rotate(cmd.Context(), batch, func(c sealedstore.Count) {
					fmt.Fprintf(out, "  %s: %d read, %d re-sealed\n", c.Column, c.Rows, c.Resealed)
				})
				for _, c := range counts {
					fmt.Fprintf(out, "%s: %d sealed, %d re-sealed, %d changed meanwhile (left as written), %d unreadable\n",
						c.Column, c.Rows, c.Resealed, c.Changed, c.Unreadable)
				}
				if err != nil {
					return err
				}
				status, err := store.Status(cmd.Context(), batch)
				if err != nil {
					return err
				}
				orgs, err := sealed.Record(cmd.Context(), audit.New(pool), &sealed.Rotation{
					Actor: operatorActor(), Primary: box.Primary(), Rotated: counts, Status: status,
				})
				if len(orgs) > 0 {
					fmt.Fprintf(out, "recorded %q in the audit trail of %d organizations\n", sealed.ActionRotate, len(orgs))
				}
				if err != nil {
					return fmt.Errorf("recording the rotation in the audit trail: %w", err)
				}
				return report(out, box, status)
			})
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Count the stored secrets sealed with keys other than the first of secrets.keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withSealed(cmd, func(_ *pgxpool.Pool, store *sealedstore.Store, box *secretbox.Box, batch int) error {
				counts, err := store.Status(cmd.Context(), batch)
				if err != nil {
					return err
				}
				return report(cmd.OutOrStdout(), box, counts)
			})
		},
	}
	cmd.AddCommand(rotate, status)
	return cmd
}

// withSealed runs fn with the sealed values' store on the owner's pool (the
// migrating role's, which row-level security does not limit) and the
// keyring of secrets.key or secrets.keys.
func withSealed(cmd *cobra.Command, fn func(pool *pgxpool.Pool, store *sealedstore.Store, box *secretbox.Box, batch int) error) error {
	batch, _ := cmd.Flags().GetInt("batch")
	if batch <= 0 {
		return errors.New("--batch must be positive")
	}
	return withOwnerPool(cmd, func(cfg *app.Config, pool *pgxpool.Pool) error {
		box, err := cfg.Keyring()
		if err != nil {
			return err
		}
		if err := migrations.Check(cmd.Context(), pool); err != nil {
			if errors.Is(err, migrations.ErrNotMigrated) {
				return &exitError{code: 2, err: fmt.Errorf("%w; run `outboxd migrate up` first", err)}
			}
			return err
		}
		return fn(pool, sealedstore.New(pool, box), box, batch)
	})
}

// operatorActor is who the CLI records in the audit trail: the operating
// system's user running it, of kind "operator", from the host it runs on.
func operatorActor() audit.Actor {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	a := audit.Actor{Subject: cmp.Or(name, os.Getenv("USER"), "operator"), Kind: audit.KindOperator}
	if host, err := os.Hostname(); err == nil && host != "" {
		a.ClientAddr = "host:" + host
	}
	return a
}

// report says, from a status's counts, what is still sealed with other
// keys and whether they can be removed from secrets.keys; values no key
// opens exit 1.
func report(out io.Writer, box *secretbox.Box, counts []sealedstore.Count) error {
	remaining, unreadable := 0, 0
	byKey := map[string]int{}
	var where, lost []string
	for _, c := range counts {
		remaining += c.Remaining()
		unreadable += c.Unreadable
		for id, n := range c.Others {
			byKey[id] += n
		}
		if n := c.Remaining(); n > 0 {
			where = append(where, fmt.Sprintf("%s %d", c.Column, n))
		}
		if c.Unreadable > 0 {
			lost = append(lost, fmt.Sprintf("%s %d", c.Column, c.Unreadable))
		}
	}
	others := slices.DeleteFunc(box.IDs(), func(id string) bool { return id == box.Primary() })
	switch {
	case remaining > 0:
		var keys []string
		for _, id := range slices.Sorted(maps.Keys(byKey)) {
			keys = append(keys, fmt.Sprintf("%q %d", id, byKey[id]))
		}
		fmt.Fprintf(out, "%d sealed values remain on other keys (%s; by key: %s): keep those keys in secrets.keys. "+
			"Values stored while a process sealed with another key land here: once every process has %q first in secrets.keys, run `outboxd secrets rotate` again.\n",
			remaining, strings.Join(where, ", "), strings.Join(keys, ", "), box.Primary())
	case len(others) > 0:
		fmt.Fprintf(out, "0 sealed values remain on other keys: every stored secret is sealed with %q, the first key; the other keys (%s) seal nothing "+
			"and can be removed from secrets.keys, unless you are rotating to one of them: list it first on every process, then run `outboxd secrets rotate`.\n",
			box.Primary(), strings.Join(others, ", "))
	default:
		fmt.Fprintf(out, "0 sealed values remain on other keys: every stored secret is sealed with %q.\n", box.Primary())
	}
	if unreadable > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d sealed values open with no key of secrets.keys (%s): no key listed can read them; store those secrets again",
			unreadable, strings.Join(lost, ", "))}
	}
	return nil
}
