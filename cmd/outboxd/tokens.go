package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
	"github.com/outboxd/outboxd/worker"
)

// withRevocations runs fn with the revocations of the configured database
// (or the running `outboxd dev` one), through the owner's pool: the
// operator acts for any organization. The API processes learn of a
// revocation within auth.revocation_refresh. A revocation withdraws the
// invocations the revoked tokens asked for that have not started, and
// deschedules their jobs with an insert-only River client; one by subject
// removes the Slack approvers mapped to the person and revokes their
// grants.
func withRevocations(cmd *cobra.Command, fn func(svc *revocation.Service, trail *audit.Service) error) error {
	return withOwnerPool(cmd, func(cfg *app.Config, pool *pgxpool.Pool) error {
		svc, err := ownerRevocations(cfg, pool)
		if err != nil {
			return err
		}
		client, err := worker.NewClient(&worker.Deps{Pool: pool, Metrics: telemetry.NewNop()}, &cfg.Worker, false)
		if err != nil {
			return err
		}
		svc.SetInvocations(invocationstore.New(client))
		trail := audit.New(pool)
		// --subject removes the Slack approvers mapped to the person and
		// revokes their grants.
		slack, err := slackapproval.New(&slackapproval.Deps{Pool: pool, Owner: pool, Audit: trail}, &slackapproval.Config{})
		if err != nil {
			return err
		}
		svc.SetPeople(slack, grant.Offboarding{Trail: trail})
		return fn(svc, trail)
	})
}

// ownerRevocations are the revocations of every organization on the
// owner's pool, which expire after auth.max_lifetime and auth.leeway as
// the API's do.
func ownerRevocations(cfg *app.Config, pool *pgxpool.Pool) (*revocation.Service, error) {
	return revocation.New(&revocation.Deps{Pool: pool, Owner: pool},
		&revocation.Config{MaxLifetime: cfg.Auth.MaxLifetime, Leeway: cfg.Auth.Leeway})
}

func newTokensCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tokens", Short: "Revoke bearer tokens and list the revocations in effect"}
	cmd.PersistentFlags().String("org", "", "organization id (required)")
	_ = cmd.MarkPersistentFlagRequired("org")
	addDevDirFlag(cmd.PersistentFlags())

	revoke := &cobra.Command{
		Use:   "revoke",
		Short: "Revoke an organization's tokens: one by --jti, a --session's, an --automation's, a person's (--subject), or all --issued-before a time",
		Long: `Revoke an organization's tokens. Name exactly one of --jti, --session,
--automation, --subject and --issued-before. --subject revokes one
person's tokens and console sessions (their verified subject: sub, or the
claim auth.idp.claims.subject names) and the sandbox and service tokens
acting for them (their user_id), removes the Slack approvers mapped to
them and revokes the grants they made, for offboarding someone without
revoking the whole organization. A revocation refuses the tokens issued
before it (iat; a token without iat counts as issued before), on every
route, event stream and /mcp, within auth.revocation_refresh in every API
process; tokens minted later for the same session, automation or person
work.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			get := func(name string) string { s, _ := cmd.Flags().GetString(name); return s }
			p := &revocation.Params{JTI: get("jti"), SessionID: get("session"), AutomationID: get("automation"), Subject: get("subject"), By: operator(cmd)}
			for flag, dst := range map[string]**time.Time{"issued-before": &p.IssuedBefore, "expires-at": &p.TokenExpiresAt} {
				s := get(flag)
				if s == "" {
					continue
				}
				t := time.Now()
				if s != "now" {
					var err error
					if t, err = time.Parse(time.RFC3339, s); err != nil {
						return fmt.Errorf("--%s must be now or an RFC 3339 time such as 2026-11-26T09:00:00Z", flag)
					}
				}
				*dst = &t
			}
			return withRevocations(cmd, func(svc *revocation.Service, trail *audit.Service) error {
				// What the revocation changes in its transaction (a
				// person's Slack approvers) is recorded as the operator's.
				r, err := svc.Revoke(audit.WithActor(cmd.Context(), operatorOf(cmd)), get("org"), p)
				var ve *errs.ValidationError
				if errors.As(err, &ve) {
					return errors.New(flagNames(ve.Message))
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked (revocation %d): %s\n", r.ID, describe(&r))
				fmt.Fprintf(cmd.OutOrStdout(), "withdrew %d invocation(s) they asked for that had not started\n", r.Withdrawn)
				// As the API records a revocation (its fields as it shows them).
				return record(cmd, trail, &audit.Change{Org: r.Org, Action: "tokens.revoke", TargetType: "revocation",
					TargetID: strconv.FormatInt(r.ID, 10), After: map[string]any{
						"id": r.ID, "jti": nilIfEmpty(r.JTI), "session_id": nilIfEmpty(r.SessionID), "automation_id": nilIfEmpty(r.AutomationID),
						"subject": nilIfEmpty(r.Subject), "issued_before": r.IssuedBefore.UTC(), "revoked_by": r.RevokedBy, "revoked_at": r.RevokedAt.UTC(), "expires_at": r.ExpiresAt,
						"withdrawn": r.Withdrawn,
					}})
			})
		},
	}
	revoke.Flags().String("jti", "", "revoke the token with this jti")
	revoke.Flags().String("session", "", "revoke every token of this session (session_id)")
	revoke.Flags().String("automation", "", "revoke every token of this automation (automation_id)")
	revoke.Flags().String("subject", "", "revoke every token and console session of this person (their verified subject), and every token acting for them (user_id)")
	revoke.Flags().String("issued-before", "", "revoke every token of the organization issued before this time (RFC 3339, or now)")
	revoke.Flags().String("expires-at", "", "with --jti: the token's exp (RFC 3339); the revocation is dropped after it")
	revoke.Flags().String("by", "", "who to record as the operator (default cli:<user>)")

	list := &cobra.Command{
		Use:   "revocations",
		Short: "List an organization's revocations in effect, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			org, _ := cmd.Flags().GetString("org")
			return withRevocations(cmd, func(svc *revocation.Service, _ *audit.Service) error {
				revs, err := svc.List(cmd.Context(), org)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tREVOKES\tREVOKED AT\tBY\tEXPIRES")
				for i := range revs {
					r := &revs[i]
					expires := "never"
					if r.ExpiresAt != nil {
						expires = r.ExpiresAt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", r.ID, describe(r), r.RevokedAt.UTC().Format(time.RFC3339), r.RevokedBy, expires)
				}
				return w.Flush()
			})
		},
	}
	cmd.AddCommand(revoke, list)
	return cmd
}

// describe says which tokens r revokes.
func describe(r *revocation.Revocation) string {
	before := r.IssuedBefore.UTC().Format(time.RFC3339)
	switch {
	case r.JTI != "":
		return fmt.Sprintf("jti %s issued before %s", r.JTI, before)
	case r.SessionID != "":
		return fmt.Sprintf("session %s, tokens issued before %s", r.SessionID, before)
	case r.AutomationID != "":
		return fmt.Sprintf("automation %s, tokens issued before %s", r.AutomationID, before)
	case r.Subject != "":
		return fmt.Sprintf("subject %s, tokens issued before %s", r.Subject, before)
	}
	return "every token issued before " + before
}

// flagNames renames the API's field names in a validation message to the
// command's flags.
var flagNames = strings.NewReplacer("session_id", "--session", "automation_id", "--automation",
	"issued_before", "--issued-before", "expires_at", "--expires-at", "jti", "--jti", "subject", "--subject").Replace

// nilIfEmpty is nil for "", as the API shows an absent selector.
func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
