package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/domain/audit"
)

// errVerifyFailed makes `outboxd audit verify` exit 1 once it has printed
// what is wrong.
var errVerifyFailed = errors.New("the audit export does not verify")

func newAuditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check the audit trail (exported with GET /v1/audit/export)",
	}
	verify := &cobra.Command{
		Use:   "verify FILE",
		Short: "Verify an audit export offline: the hash chain, every hash recomputed, the sequence without gaps",
		Long: "verify reads an export of one organization's audit trail (JSON lines, oldest first, as GET /v1/audit/export\n" +
			"answers; - reads standard input) and checks, without the database, that its entries count from seq 1\n" +
			"without gaps, that each names the previous entry's hash, and that each hash matches the entry's fields.\n" +
			"It prints the first broken entry and why, and exits 1; or the number of entries and exits 0.\n" +
			"Once retention deleted the oldest entries (retention.audit_entries), the export's first line is their\n" +
			"anchor: the first kept seq and the hash of the last deleted entry, which the first kept names. The chain\n" +
			"is then checked from the anchor, and verify says so; the anchor itself cannot be checked from the file\n" +
			"alone (compare it with an earlier export, whose entry of that seq has that hash).\n" +
			"Entries cut from the end of an export are not detectable from the file alone: compare its last seq and\n" +
			"hash with the newest entry of GET /v1/audit.",
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			in := os.Stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			v, err := audit.VerifyExport(in)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: FAILED after %d good entries: %v\n", args[0], v.Entries, err)
				return errVerifyFailed
			}
			out := cmd.OutOrStdout()
			if a := v.Anchor; a != nil {
				fmt.Fprintf(out, "%s: OK, %d entries (seq %d to %d), chain intact from its anchor: entries before seq %d were deleted by retention "+
					"(older than %s, deleted by %s); the first kept entry names the anchor's prev_hash %s, which cannot be checked from this file alone\n",
					args[0], v.Entries, v.FirstSeq, v.LastSeq, a.FirstSeq, a.PrunedBefore.Format(time.RFC3339), a.PrunedAt.Format(time.RFC3339), a.PrevHash)
				fmt.Fprintf(out, "last entry: seq %d, hash %s\n", v.LastSeq, v.LastHash)
				return nil
			}
			fmt.Fprintf(out, "%s: OK, %d entries, chain intact\n", args[0], v.Entries)
			fmt.Fprintf(out, "last entry: seq %d, hash %s\n", v.LastSeq, v.LastHash)
			return nil
		},
	}
	cmd.AddCommand(verify)
	return cmd
}
