package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
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
				purger := retention.NewPurger(pool, batch, revocations)
				counts, err := purger.Count(cmd.Context(), org)
				if err != nil {
					return err
				}
				verb := "would delete"
				var cutoff time.Time
				if yes {
					if counts, cutoff, err = purger.Purge(cmd.Context(), org); err != nil {
						return err
					}
					verb = "deleted"
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "TABLE\tROWS")
				var total int64
				for _, c := range counts {
					fmt.Fprintf(w, "%s\t%d\n", c.Table, c.Rows)
					total += c.Rows
				}
				fmt.Fprintf(w, "%s %d row(s) of organization %q\n", verb, total, org)
				if yes {
					fmt.Fprintf(w, "every token of organization %q issued before %s is refused from now on\n", org, cutoff.UTC().Format(time.RFC3339))
				} else {
					fmt.Fprintln(w, "dry run: nothing changed; run again with --yes to delete")
				}
				return w.Flush()
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
