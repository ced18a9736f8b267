package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/domain/admin"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
)

// withService runs fn with the administration the HTTP API uses for
// operations, on the configured database or the running `outboxd dev` one.
// It needs no secrets: operations read and write jobs, never credentials or
// tokens.
func withService(cmd *cobra.Command, fn func(svc *admin.Service) error) error {
	return withServiceAndTrail(cmd, func(svc *admin.Service, _ *audit.Service) error { return fn(svc) })
}

// withServiceAndTrail is withService with the audit trail, for a command
// that changes an organization.
func withServiceAndTrail(cmd *cobra.Command, fn func(svc *admin.Service, trail *audit.Service) error) error {
	return withOwnerPool(cmd, func(cfg *app.Config, pool *pgxpool.Pool) error {
		svc, closeOps, err := app.NewOps(cfg, pool, nil)
		if err != nil {
			return err
		}
		defer closeOps()
		return fn(svc, audit.New(pool))
	})
}

// record appends the operator's change to its organization's audit
// trail, as the API does for a change made through it; the change is
// made already, so a failure says so.
func record(cmd *cobra.Command, trail *audit.Service, c *audit.Change) error {
	actor := operatorOf(cmd)
	c.Actor = &actor
	if err := trail.Record(context.WithoutCancel(cmd.Context()), c); err != nil {
		return fmt.Errorf("%s is done, but recording it in the audit trail failed: %w", c.Action, err)
	}
	return nil
}

// operatorOf is the operator of cmd as the audit trail records them
// (operatorActor, named by --by when given).
func operatorOf(cmd *cobra.Command) audit.Actor {
	actor := operatorActor()
	if by, _ := cmd.Flags().GetString("by"); by != "" {
		actor.Subject = by
	}
	return actor
}

func operator(cmd *cobra.Command) string {
	if by, _ := cmd.Flags().GetString("by"); by != "" {
		return by
	}
	if u, err := user.Current(); err == nil {
		return "cli:" + u.Username
	}
	return "cli"
}

func newDLQCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "List, replay or discard dead letters (failed invocations)"}
	cmd.PersistentFlags().String("org", "", "organization id (required)")
	cmd.PersistentFlags().String("by", "", "who to record as the operator (default cli:<user>)")
	_ = cmd.MarkPersistentFlagRequired("org")
	addDevDirFlag(cmd.PersistentFlags())

	list := &cobra.Command{
		Use:   "list",
		Short: "List dead letters with their last error",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			org, _ := cmd.Flags().GetString("org")
			limit, _ := cmd.Flags().GetInt("limit")
			return withService(cmd, func(svc *admin.Service) error {
				invs, total, err := svc.ListDeadLetters(cmd.Context(), org, auth.SourceClaim{}, invocation.Page{Limit: limit}) // every source
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tACTION\tATTEMPT\tDEAD SINCE\tERROR")
				for _, inv := range invs {
					// A provider's error may span lines or hold tabs: one
					// row per dead letter.
					errMsg := ""
					if inv.Error != nil {
						errMsg = strings.Join(strings.Fields(*inv.Error), " ")
					}
					// In UTC, as the API shows it, whatever the operator's
					// time zone.
					fmt.Fprintf(w, "%s\t%s.%s\t%d\t%s\t%s\n", inv.ID, inv.Integration, inv.Action, inv.Attempt, inv.DeadLetteredAt.UTC().Format(time.RFC3339), errMsg)
				}
				fmt.Fprintf(w, "%d dead letter(s)\n", total)
				return w.Flush()
			})
		},
	}
	list.Flags().Int("limit", 100, "how many to show (at most 100)")

	batch := func(use, short string, retry bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " ID...",
			Short: short,
			Args:  cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, ids []string) error {
				org, _ := cmd.Flags().GetString("org")
				return withServiceAndTrail(cmd, func(svc *admin.Service, trail *audit.Service) error {
					op, action, past := svc.DiscardDeadLetters, "dead_letter.discard", "discarded"
					if retry {
						op, action, past = svc.RetryDeadLetters, "dead_letter.retry", "retried"
					}
					// The operator's own command: every source.
					results, err := op(cmd.Context(), org, operator(cmd), ids, auth.SourceClaim{})
					if err != nil {
						return err
					}
					enc := json.NewEncoder(cmd.OutOrStdout())
					failed := 0
					var done, sources []string
					lines := make([]batchLine, len(results))
					for i, r := range results {
						lines[i] = batchLine(r)
						if err := enc.Encode(lines[i]); err != nil {
							return err
						}
						if r.Error != "" {
							failed++
						}
						if r.Status == "retried" || r.Status == "discarded" {
							done = append(done, r.ID)
						}
						if r.Source != "" {
							sources = append(sources, r.Source)
						}
					}
					// As the API records the same operation.
					if len(done) > 0 {
						if err := record(cmd, trail, &audit.Change{Org: org, Action: action, TargetType: "dead_letters",
							After: map[string]any{"ids": done, "results": lines}, Sources: sources}); err != nil {
							return err
						}
					}
					if failed > 0 {
						return &exitError{code: 1, err: fmt.Errorf("%d of %d could not be %s", failed, len(results), past)}
					}
					return nil
				})
			},
		}
	}
	cmd.AddCommand(list,
		batch("retry", "Replay dead letters: same invocation id and idempotency key, a fresh job", true),
		batch("discard", "Discard dead letters: they stay failed and leave the list", false))
	return cmd
}

// batchLine is the JSON line `outboxd dlq retry|discard` prints for each
// id; it converts from admin.BatchResult, so the two keep the same fields.
type batchLine struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Source is not printed: the audit entry's sources.
	Source string `json:"-"`
}

func newQueueCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List, pause or resume River queues: every organization's jobs, on every worker process",
		Long: "The operator's control of River's queues, which every organization shares: counts and ages\n" +
			"over all organizations, and a pause that stops every organization's jobs. An organization's\n" +
			"admins see and pause only their own organization's work, through the API (/v1/queues).",
	}
	addDevDirFlag(cmd.PersistentFlags())
	list := &cobra.Command{
		Use:   "list",
		Short: "List queues with their job counts and the age of the oldest job, by state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withService(cmd, func(svc *admin.Service) error {
				queues, err := svc.Queues(cmd.Context())
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "QUEUE\tPAUSED\tSTATE\tJOBS\tOLDEST AGE")
				for _, q := range queues {
					for _, state := range slices.Sorted(maps.Keys(q.States)) {
						st := q.States[state]
						// Counting stops at the cap: at it, there are at
						// least that many.
						count := strconv.FormatInt(st.Count, 10)
						if st.Count >= telemetry.MaxQueueCount {
							count += "+"
						}
						fmt.Fprintf(w, "%s\t%v\t%s\t%s\t%s\n", q.Name, q.Paused, state, count, oldestAge(st.AgeSeconds))
					}
				}
				return w.Flush()
			})
		},
	}
	op := func(use string, pause bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " NAME",
			Short: use + " a queue",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return withService(cmd, func(svc *admin.Service) error {
					fn := svc.ResumeQueue
					if pause {
						fn = svc.PauseQueue
					}
					if err := fn(cmd.Context(), args[0]); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "queue %s %sd\n", args[0], use)
					return nil
				})
			},
		}
	}
	cmd.AddCommand(list, op("pause", true), op("resume", false))
	return cmd
}

// oldestAge is the OLDEST AGE column of `queue list`: how long the oldest
// job of a state has waited, "-" when none. The first scheduled or
// retryable job is usually still ahead, a negative age: it shows as when
// it is due ("in 5m0s"), not as an age below zero.
func oldestAge(seconds *float64) string {
	if seconds == nil {
		return "-"
	}
	d := time.Duration(*seconds * float64(time.Second)).Round(time.Second)
	if d < 0 {
		return "in " + (-d).String()
	}
	return d.String()
}
