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
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/platform/pglaunch"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/migrations"

	"github.com/golang-jwt/jwt/v5"
)

// devState is what `outboxd dev` keeps between runs, next to its database.
type devState struct {
	JWTSecret  string `json:"jwt_secret"`
	SecretsKey string `json:"secrets_key"`
	// DemoCredential is the demo source's credential: random like a real
	// one, so that scrubbing it from answers takes no ordinary word.
	DemoCredential string `json:"demo_credential,omitempty"`
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
// the first run (and the demo credential on the first run that lacks it).
func loadOrCreateDevState(dataDir string) (*devState, error) {
	st, err := readDevState(dataDir)
	if err == nil && st.DemoCredential != "" {
		return st, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if st == nil {
		st = &devState{JWTSecret: secretbox.NewKey(), SecretsKey: secretbox.NewKey()}
	}
	st.DemoCredential = "demo-" + secretbox.NewKey()
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
		Short: "Run outboxd on an embedded local Postgres, with generated secrets, ready-made tokens and a demo provider",
		Long: `dev starts a local PostgreSQL from the installed binaries in --data-dir (unless
DATABASE_URL is set: then it uses that database, and creates it on that
server when it does not exist yet), migrates it, generates a JWT secret and a secrets key on
the first run (kept in --data-dir/dev.json), serves the API and the workers,
and prints tokens to try it. Ctrl-C stops everything; data survives restarts.

While it runs, --data-dir/running.json tells the other commands (dlq, queue,
migrate, token, tokens, org) where its database is, so they need no
DATABASE_URL.

The demo provider (source "demo", --demo=false to leave it out) runs in the
process and sends nothing anywhere: its messages are written to the console.
It exists only in dev, never in serve.`,
		Args: cobra.NoArgs,
		RunE: runDev,
	}
	addDevDirFlag(cmd.PersistentFlags())
	cmd.Flags().String("http-addr", "", "listen address (http.addr, default "+app.DefaultHTTPAddr+")")
	cmd.Flags().Bool("demo", true, "add the built-in demo provider (source \"demo\")")
	bindFlag(cmd, "http-addr", "http.addr")
	cmd.AddCommand(&cobra.Command{
		Use:   "clean",
		Short: "Delete the dev directory: its database (wherever the cluster lives) and its secrets",
		Args:  cobra.NoArgs,
		RunE:  runDevClean,
	})
	return cmd
}

func runDev(cmd *cobra.Command, _ []string) error {
	ctx := cmd.Context()
	v, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	logger, err := newLogger(v, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	dataDir, _ := cmd.Flags().GetString(devDirFlag)
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
	if keys, err := secretKeys(v); v.GetString("secrets.key") == "" && err == nil && len(keys) == 0 {
		v.Set("secrets.key", state.SecretsKey)
	}

	running := &devRunning{PID: os.Getpid()}
	embeddedURL := ""
	if v.GetString("database.url") == "" {
		pg, err := pglaunch.Start(ctx, &pglaunch.Config{DataDir: filepath.Join(dataDir, "pg"), Logger: logger})
		if errors.Is(err, pglaunch.ErrAlreadyRunning) {
			return fmt.Errorf("%w\nis another `outboxd dev` running on %s? Stop it, or give this one its own --%s", err, dataDir, devDirFlag)
		}
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
		embeddedURL = pg.URL("outboxd")
		v.Set("database.url", embeddedURL)
		running.PostgresDataDir = pg.DataDir()
		logger.Info("embedded Postgres running", "data_dir", pg.DataDir(), "socket_dir", pg.SocketDir(), "port", pg.Port())
	} else if created, err := ensureDevDatabase(ctx, v.GetString("database.url")); err != nil {
		return err
	} else if created {
		logger.Info("created the database of database.url, which did not exist")
	}
	running.DatabaseURL = v.GetString("database.url")

	cfg, err := appConfig(v)
	if err != nil {
		return err
	}
	demo, _ := cmd.Flags().GetBool("demo")
	if demo {
		cfg.DemoOrg, cfg.DemoCredential = devOrg, state.DemoCredential
	}
	pool, err := openServingPool(cmd, v, app.RoleAll, cfg.Worker.WithDefaults().MaxWorkers, logger)
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
	if err := a.CheckSecrets(ctx); errors.Is(err, credential.ErrKeyChanged) {
		return fmt.Errorf("%w\nThe database outlived the development secrets in %s (dev.json was removed or replaced). "+
			"Restore that file, or start over with `outboxd dev clean` (make clean), which deletes the database too", err, dataDir)
	} else if err != nil {
		return err
	}
	defer removeDevRunning(dataDir)
	return a.Run(ctx, func(addr string) {
		running.HTTPAddr = addr
		if err := writeDevRunning(dataDir, running); err != nil {
			logger.Warn("recording the running dev for other commands", "error", err)
		}
		printDevWelcome(cmd.OutOrStdout(), addr, cfg.JWTSecret, demo, embeddedURL, cfg.Outbox.WithDefaults().InteractiveTTL)
	})
}

func runDevClean(cmd *cobra.Command, _ []string) error {
	dataDir, _ := cmd.Flags().GetString(devDirFlag)
	if r, err := readDevRunning(dataDir); err == nil {
		return fmt.Errorf("`outboxd dev` (pid %d) is running on %s: stop it first", r.PID, dataDir)
	}
	removed, err := pglaunch.RemoveCluster(filepath.Join(dataDir, "pg"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(dataDir); err == nil {
		if err := os.RemoveAll(dataDir); err != nil {
			return err
		}
		removed = append(removed, dataDir)
	}
	for _, dir := range removed {
		fmt.Fprintln(cmd.OutOrStdout(), "removed", dir)
	}
	return nil
}

// printDevWelcome prints the tokens and what to try; pgURL is the embedded
// Postgres's URL ("" when DATABASE_URL is used), approvalWindow how long a
// session's request waits for a decision (approval.interactive_ttl).
func printDevWelcome(out io.Writer, addr, secret string, demo bool, pgURL string, approvalWindow time.Duration) {
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

  Web console: %[1]s/console/ (sign in with the OWNER or MEMBER token)
`, base, devOrg, owner, member, sandbox, service)
	approve := fmt.Sprintf(`
  It is a write, so it waits for approval, for %[2]s (approval.interactive_ttl;
  undecided by then, it expires): approve it in the web console's inbox, or
  find it and approve it with curl:

  curl -s '%[1]s/v1/invocations?status=pending' -H "Authorization: Bearer $OWNER"
  curl -s -X POST %[1]s/v1/invocations/<id>/approve -H "Authorization: Bearer $OWNER" -d '{"mode":"once"}'
`, base, spelledDuration(approvalWindow))
	if demo {
		fmt.Fprintf(out, `
1. Try the built-in DEMO provider (source "demo"; nothing leaves this machine,
   its messages are printed in this console):

  curl -s -X POST %[1]s/v1/sessions/dev-session/actions/invoke \
    -H "Authorization: Bearer $SANDBOX" -H 'Content-Type: application/json' \
    -d '{"integration":"demo","action":"send_message","params":{"channel":"#general","text":"hello from outboxd"}}'
%[2]s
2. Connect a real provider: store its credential, then invoke it the same way
   (the catalog lists a provider once it has a credential):

  curl -s -X PUT %[1]s/v1/credentials/slack -H "Authorization: Bearer $OWNER" -d '{"token":"xoxb-..."}'
  curl -s %[1]s/v1/sessions/dev-session/actions/available -H "Authorization: Bearer $SANDBOX"
`, base, approve)
	} else {
		fmt.Fprintf(out, `
1. Store a provider credential first (the catalog is empty until you do):

  curl -s -X PUT %[1]s/v1/credentials/slack -H "Authorization: Bearer $OWNER" -d '{"token":"xoxb-..."}'

2. Then invoke (Slack's send_message posts for real, to a channel ID of
   yours: with an ID a retry after a lost answer finds the message it
   posted instead of posting again):

  curl -s -X POST %[1]s/v1/sessions/dev-session/actions/invoke \
    -H "Authorization: Bearer $SANDBOX" -H 'Content-Type: application/json' \
    -d '{"integration":"slack","action":"send_message","params":{"channel":"C0123456789","text":"hello from outboxd"}}'
%[2]s`, base, approve)
	}
	fmt.Fprintf(out, `
An MCP client (Claude Code, Cursor, any MCP host) gets the same catalog as
tools at %[1]s/mcp with the SANDBOX token; for Claude Code:

  claude mcp add --transport http outboxd %[1]s/mcp --header "Authorization: Bearer $SANDBOX"

or, in a client's JSON configuration:

  {"mcpServers": {"outboxd": {"type": "http", "url": "%[1]s/mcp",
    "headers": {"Authorization": "Bearer <the SANDBOX token>"}}}}
`, base)
	try := "list"
	if demo {
		try = `run demo echo --params '{"text":"hi"}'`
	}
	fmt.Fprintf(out, `
From a shell, as an agent in a sandbox would, the agent CLI invokes and
waits for the outcome:

  OUTBOXD_URL=%[1]s OUTBOXD_TOKEN=$SANDBOX ./bin/outboxd actions %[2]s
`, base, try)
	fmt.Fprintf(out, `
While dev runs, the other commands find its database: ./bin/outboxd queue list,
./bin/outboxd dlq list --org %[1]s, ./bin/outboxd token --org %[1]s --kind user --role owner.
`, devOrg)
	if pgURL == "" {
		// DATABASE_URL's server is not dev's to stop.
		fmt.Fprintln(out, "\nCtrl-C stops outboxd.")
		return
	}
	fmt.Fprintf(out, `
The embedded Postgres has no TCP port; its Unix socket is out of other users' reach:

  psql '%s'
`, pgURL)
	fmt.Fprintln(out, "\nCtrl-C stops outboxd and its Postgres.")
}

// spelledDuration writes d in whole hours or minutes when it is one ("24
// hours", "5 minutes"), as time.Duration.String otherwise.
func spelledDuration(d time.Duration) string {
	unit := func(n time.Duration, word string) string {
		if n == 1 {
			return "1 " + word
		}
		return fmt.Sprintf("%d %ss", n, word)
	}
	switch {
	case d > 0 && d%time.Hour == 0:
		return unit(d/time.Hour, "hour")
	case d > 0 && d%time.Minute == 0:
		return unit(d/time.Minute, "minute")
	}
	return d.String()
}
