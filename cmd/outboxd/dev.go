package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/auth"
	"github.com/outboxd/outboxd/internal/pglaunch"
	"github.com/outboxd/outboxd/internal/secretbox"
	"github.com/outboxd/outboxd/migrations"

	"github.com/golang-jwt/jwt/v5"
)

// devState is what `outboxd dev` keeps between runs, next to its database.
type devState struct {
	JWTSecret  string `json:"jwt_secret"`
	SecretsKey string `json:"secrets_key"`
}

const devStateFile = "dev.json"

func readDevState(dataDir string) (*devState, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, devStateFile))
	if err != nil {
		return nil, err
	}
	var st devState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", devStateFile, err)
	}
	return &st, nil
}

// loadOrCreateDevState returns the development secrets, generating them on
// the first run.
func loadOrCreateDevState(dataDir string) (*devState, error) {
	st, err := readDevState(dataDir)
	if err == nil {
		return st, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	st = &devState{JWTSecret: secretbox.NewKey(), SecretsKey: secretbox.NewKey()}
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dataDir, devStateFile), b, 0o600); err != nil {
		return nil, err
	}
	return st, nil
}

const devOrg = "dev-org"

func newDevCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run outboxd on an embedded local Postgres, with generated secrets and ready-made tokens",
		Long: `dev starts a local PostgreSQL from the installed binaries in --data-dir (unless
DATABASE_URL is set), migrates it, generates a JWT secret and a secrets key on
the first run (kept in --data-dir/dev.json), serves the API and the workers,
and prints tokens to try it. Ctrl-C stops everything; data survives restarts.`,
		Args: cobra.NoArgs,
		RunE: runDev,
	}
	cmd.Flags().String("data-dir", ".outboxd", "where the embedded database and development secrets live")
	cmd.Flags().String("http-addr", "", "listen address (http.addr, default 127.0.0.1:8080)")
	bindFlag(cmd, "http-addr", "http.addr")
	return cmd
}

func runDev(cmd *cobra.Command, _ []string) error {
	ctx := cmd.Context()
	v, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	logger, err := newLogger(v)
	if err != nil {
		return err
	}
	dataDir, _ := cmd.Flags().GetString("data-dir")
	dataDir, err = filepath.Abs(dataDir)
	if err != nil {
		return err
	}
	state, err := loadOrCreateDevState(dataDir)
	if err != nil {
		return fmt.Errorf("development secrets: %w", err)
	}
	if v.GetString("auth.jwt_secret") == "" {
		v.Set("auth.jwt_secret", state.JWTSecret)
	}
	if v.GetString("secrets.key") == "" {
		v.Set("secrets.key", state.SecretsKey)
	}

	if v.GetString("database.url") == "" {
		pg, err := pglaunch.Start(ctx, &pglaunch.Config{DataDir: filepath.Join(dataDir, "pg"), Logger: logger})
		if err != nil {
			return fmt.Errorf("starting the embedded Postgres: %w", err)
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := pg.Stop(stopCtx); err != nil {
				logger.Warn("stopping the embedded Postgres", "error", err)
			}
		}()
		if err := pg.CreateDatabase(ctx, "outboxd"); err != nil {
			return err
		}
		v.Set("database.url", pg.URL("outboxd"))
		logger.Info("embedded Postgres running", "data_dir", pg.DataDir(), "port", pg.Port())
	}

	cfg, err := appConfig(v)
	if err != nil {
		return err
	}
	pool, err := openPool(ctx, v)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return err
	}
	a, err := app.New(cfg, app.RoleAll, pool, logger)
	if err != nil {
		return err
	}
	return a.Run(ctx, func(addr string) {
		printDevWelcome(cmd.OutOrStdout(), addr, cfg.JWTSecret)
	})
}

func printDevWelcome(out io.Writer, addr, secret string) {
	mint := func(c auth.Claims) string {
		t, err := auth.Mint(secret, c, 30*24*time.Hour)
		if err != nil {
			panic(err) // static claims
		}
		return t
	}
	user := func(role auth.Role) auth.Claims {
		return auth.Claims{Org: devOrg, Kind: auth.KindUser, Role: role, RegisteredClaims: jwt.RegisteredClaims{Subject: "dev-" + string(role)}}
	}
	owner := mint(user(auth.RoleOwner))
	member := mint(user(auth.RoleMember))
	sandbox := mint(auth.Claims{Org: devOrg, Kind: auth.KindSandbox, SessionID: "dev-session", RegisteredClaims: jwt.RegisteredClaims{Subject: "dev-sandbox"}})
	service := mint(auth.Claims{Org: devOrg, Kind: auth.KindService, AutomationID: "dev-automation", RegisteredClaims: jwt.RegisteredClaims{Subject: "dev-automation"}})
	base := "http://" + addr
	fmt.Fprintf(out, `
outboxd is ready at %[1]s (org %[2]q; tokens valid 30 days)

  OWNER=%[3]s
  MEMBER=%[4]s
  SANDBOX=%[5]s
  SERVICE=%[6]s

Try it (Slack's send_message is a write: it waits for approval):

  curl -s -X POST %[1]s/v1/sessions/dev-session/actions/invoke \
    -H "Authorization: Bearer $SANDBOX" -H 'Content-Type: application/json' \
    -d '{"integration":"slack","action":"send_message","params":{"channel":"#general","text":"hello from outboxd"}}'

  curl -s %[1]s/v1/invocations?status=pending -H "Authorization: Bearer $OWNER"
  curl -s -X POST %[1]s/v1/invocations/<id>/approve -H "Authorization: Bearer $OWNER" -d '{"mode":"once"}'

Store a Slack bot token first to really post:
  curl -s -X PUT %[1]s/v1/credentials/slack -H "Authorization: Bearer $OWNER" -d '{"token":"xoxb-..."}'

Ctrl-C stops outboxd and its Postgres.
`, base, devOrg, owner, member, sandbox, service)
}
