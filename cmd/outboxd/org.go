package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/domain/retention"
)

func newOrgCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "org", Short: "Operate on a whole organization"}
	addDevDirFlag(cmd.PersistentFlags())
	purge := &cobra.Command{
		Use:   "purge ORG",
		Short: "Remove everything an organization has; without --yes, only count it",
		// The tables from the list the purge goes by, so that the help
		// names every one (its audit trail included).
		Long: "Removes every row of the organization, in batches of short transactions, from the tables\n" +
			strings.Join(retention.PurgeTables(), ", ") + ";\n" +
			"then it revokes every token of the organization issued until then, so that none of\n" +
			"them (a token revoked before included) writes into it again.\n" +
			"Without --yes it is a dry run: it prints how many rows each table holds and changes nothing.\n" +
			"With --yes nothing is counted first: each table's deleted rows are printed as it is done.\n" +
			"Stop the organization's callers first; purging again removes what they wrote meanwhile.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			org := args[0]
			yes, _ := cmd.Flags().GetBool("yes")
			batch, _ := cmd.Flags().GetInt("batch")
			if batch < 1 || batch > 100_000 {
				// NewPurger would take it for the default without a word.
				return fmt.Errorf("--batch %d: it must be between 1 and 100000 rows per delete", batch)
			}
			return withOwnerPool(cmd, func(cfg *app.Config, pool *pgxpool.Pool) error {
				revocations, err := ownerRevocations(cfg, pool)
				if err != nil {
					return err
				}
				purger := retention.NewPurger(pool, batch, revocations, cfg.RateBuckets())
				if !yes {
					return dryRun(cmd, purger, org)
				}
				return purgeOrg(cmd, purger, org)
			})
		},
	}
	purge.Flags().Bool("yes", false, "delete; without it, only count (a dry run)")
	purge.Flags().Bool("dry-run", true, "count and change nothing (the default; --yes deletes)")
	purge.Flags().Int("batch", retention.DefaultBatch, "rows per delete, each its own transaction")
	purge.MarkFlagsMutuallyExclusive("yes", "dry-run")
	cmd.AddCommand(purge)
	return cmd
}

// dryRun prints how many rows of org each table holds.
func dryRun(cmd *cobra.Command, purger *retention.Purger, org string) error {
	counts, err := purger.Count(cmd.Context(), org)
	if err != nil {
		return err
	}
	out, row := cmd.OutOrStdout(), tableRow()
	fmt.Fprint(out, row("TABLE", "ROWS"))
	var total int64
	for _, c := range counts {
		fmt.Fprint(out, row(c.Table, strconv.FormatInt(c.Rows, 10)))
		total += c.Rows
	}
	fmt.Fprintf(out, "would delete %d row(s) of organization %q\n", total, org)
	fmt.Fprintln(out, "dry run: nothing changed; run again with --yes to delete")
	return nil
}

// purgeOrg purges org. Nothing is counted first: each table's line comes
// as the table is done, which for a large organization shows how the purge
// goes, and where it stopped if it fails.
func purgeOrg(cmd *cobra.Command, purger *retention.Purger, org string) error {
	out, row := cmd.OutOrStdout(), tableRow()
	fmt.Fprint(out, row("TABLE", "ROWS"))
	var total int64
	_, cutoff, err := purger.Purge(cmd.Context(), org, func(c retention.PurgeCount) {
		fmt.Fprint(out, row(c.Table, strconv.FormatInt(c.Rows, 10)))
		total += c.Rows
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "deleted %d row(s) of organization %q\n", total, org)
	fmt.Fprintf(out, "every token of organization %q issued before %s is refused from now on\n", org, cutoff.UTC().Format(time.RFC3339))
	return nil
}

// tableRow returns a formatter of the purge's table lines, its first
// column as wide as the longest table name, so that lines printed one at
// a time line up.
func tableRow() func(table, rows string) string {
	width := len("TABLE")
	for _, t := range retention.PurgeTables() {
		width = max(width, len(t))
	}
	return func(table, rows string) string {
		return fmt.Sprintf("%-*s  %s\n", width, table, rows)
	}
}
