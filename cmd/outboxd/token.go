package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/domain/auth"
)

func newTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print a bearer token signed with auth.jwt_secret (for development and operations)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			secret := v.GetString("auth.jwt_secret")
			if secret == "" {
				dataDir, _ := cmd.Flags().GetString("data-dir")
				state, err := readDevState(dataDir)
				if err != nil {
					return errors.New("auth.jwt_secret is not set (OUTBOXD_AUTH_JWT_SECRET), and no `outboxd dev` state was found in " + dataDir)
				}
				secret = state.JWTSecret
			}
			get := func(name string) string { s, _ := cmd.Flags().GetString(name); return s }
			ttl, _ := cmd.Flags().GetDuration("ttl")
			claims := auth.Claims{
				Org: get("org"), Kind: auth.Kind(get("kind")), Role: auth.Role(get("role")),
				SessionID: get("session"), AutomationID: get("automation"), UserID: get("user"),
				RegisteredClaims: jwt.RegisteredClaims{Subject: get("sub")},
			}
			if cmd.Flags().Changed("sources") {
				// "slack, linear" names slack and linear: a source id with
				// a space would name no source, and the token would
				// silently be refused the one the operator meant.
				var ids []string
				for id := range strings.SplitSeq(get("sources"), ",") {
					if id = strings.TrimSpace(id); id != "" {
						ids = append(ids, id)
					}
				}
				claims.Sources = auth.OnlySources(ids...)
			}
			if err := checkTokenFlags(claims); err != nil {
				return err
			}
			if ttl <= 0 {
				return fmt.Errorf("--ttl %s: a token's lifetime must be positive (a token minted with it has already expired)", ttl)
			}
			if limit := v.GetDuration("auth.max_lifetime"); limit > 0 && ttl > limit {
				return fmt.Errorf("--ttl %s is longer than auth.max_lifetime (%s): outboxd would refuse the token", ttl, limit)
			}
			if claims.Subject == "" {
				claims.Subject = defaultSubject(claims)
			}
			claims.ID = rand.Text()
			token, err := auth.Mint(secret, claims, ttl)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), token)
			// Beside the token, not in it: TOKEN=$(outboxd token ...) works.
			fmt.Fprintf(cmd.ErrOrStderr(), "jti %s; revoke this token alone with: outboxd tokens revoke --org %s --jti %s --expires-at %s\n",
				claims.ID, claims.Org, claims.ID, time.Now().Add(ttl).UTC().Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().String("org", "", "organization id (required)")
	cmd.Flags().String("kind", "", "user, sandbox or service (required)")
	cmd.Flags().String("role", "", "owner, admin or member (user tokens)")
	cmd.Flags().String("session", "", "session id (sandbox tokens)")
	cmd.Flags().String("automation", "", "automation id (optional)")
	cmd.Flags().String("user", "", "user the sandbox or service token acts for (optional; prefers their credentials)")
	cmd.Flags().String("sub", "", "subject; defaults from kind and role")
	cmd.Flags().String("sources", "", "comma-separated source ids the token may use; --sources '' allows none (default: the claim is left out, every source)")
	cmd.Flags().Duration("ttl", 24*time.Hour, "token lifetime")
	addDevDirFlag(cmd.Flags())
	_ = cmd.MarkFlagRequired("org")
	_ = cmd.MarkFlagRequired("kind")
	return cmd
}

// checkTokenFlags names the flag a token needs, where minting would name
// the claim.
func checkTokenFlags(c auth.Claims) error {
	switch c.Kind {
	case auth.KindUser:
		switch c.Role {
		case auth.RoleOwner, auth.RoleAdmin, auth.RoleMember:
		case "":
			return errors.New("--kind user needs --role owner, admin or member")
		default:
			return fmt.Errorf("invalid role %q: --role must be owner, admin or member", c.Role)
		}
	case auth.KindSandbox:
		if c.SessionID == "" {
			return errors.New("--kind sandbox needs --session (the session id the agent runs in)")
		}
	case auth.KindService:
	default:
		return fmt.Errorf("invalid --kind %q: use user, sandbox or service", c.Kind)
	}
	return nil
}

func defaultSubject(c auth.Claims) string {
	switch c.Kind {
	case auth.KindUser:
		return "user-" + string(c.Role)
	case auth.KindSandbox:
		return "sandbox-" + c.SessionID
	default:
		if c.AutomationID != "" {
			return "automation-" + c.AutomationID
		}
		return "service"
	}
}
