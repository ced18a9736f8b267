package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/migrations"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "outboxd",
		Short:         "Execute AI-agent actions on external services safely",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("config", "", "YAML config file (see configs/outboxd.example.yaml)")
	root.PersistentFlags().String("database-url", "", "Postgres URL (database.url; DATABASE_URL also works)")
	root.PersistentFlags().String("log-level", "", "debug, info, warn or error (log.level)")
	bindPersistentFlag(root, "database-url", "database.url")
	bindPersistentFlag(root, "log-level", "log.level")
	root.AddCommand(newServeCommand(), newActionsCommand(), newMigrateCommand(), newDevCommand(), newTokenCommand(), newBenchCommand(), newDLQCommand(), newQueueCommand(), newSecretsCommand(), newTokensCommand(), newAuditCommand(), newOrgCommand())
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command that only groups others
// (`outboxd dlq`, `outboxd secrets`, ...) refuse an unknown subcommand
// with an error, which cobra would answer with the help and exit 0, read
// by a script as success. Alone, such a command still prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !cmd.HasParent() || !cmd.HasSubCommands() || cmd.Run != nil || cmd.RunE != nil {
		return // the root refuses unknown commands by itself
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		hint := ""
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			hint = ": did you mean " + strings.Join(s, " or ") + "?"
		}
		return fmt.Errorf("unknown command %q for %q%s (%s --help)", args[0], cmd.CommandPath(), hint, cmd.CommandPath())
	}
}

// openPool connects to database.url with the pool size the URL gives
// (pgxpool's default otherwise): enough for the short-lived commands.
// Commands with a --data-dir flag fall back to the database of the
// `outboxd dev` running there.
func openPool(cmd *cobra.Command, v *viper.Viper) (*pgxpool.Pool, error) {
	return connectPool(cmd, v, nil)
}

// withOwnerPool runs an operator command's fn with the configuration and
// a pool on the configured database (or the running `outboxd dev` one) as
// the migrating role, which row-level security does not limit; the pool is
// closed when fn returns.
func withOwnerPool(cmd *cobra.Command, fn func(cfg *app.Config, pool *pgxpool.Pool) error) error {
	v, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	cfg, err := appConfig(v)
	if err != nil {
		return err
	}
	pool, err := openPool(cmd, v)
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(cfg, pool)
}

// openServingPool is openPool for a process serving role, sized by
// servingPoolSize. It logs the size and where it came from.
func openServingPool(cmd *cobra.Command, v *viper.Viper, role app.Role, maxWorkers int, logger *slog.Logger) (*pgxpool.Pool, error) {
	return connectPool(cmd, v, func(cfg *pgxpool.Config, url string) error {
		size, from, err := servingPoolSize(v.GetInt("database.max_conns"), url, role, maxWorkers, runtime.GOMAXPROCS(0))
		if err != nil {
			return err
		}
		if size > 0 {
			cfg.MaxConns = size
		}
		logger.Info("database pool", "max_conns", cfg.MaxConns, "from", from)
		return nil
	})
}

// servingPoolSize is the pool size of a serving process: database.max_conns
// when set, else pool_max_conns when the URL has it (returned as 0: the URL
// applies), else app.PoolSize for role. from names which.
func servingPoolSize(maxConns int, url string, role app.Role, maxWorkers, procs int) (size int32, from string, err error) {
	switch {
	case maxConns < 0 || maxConns > math.MaxInt32:
		return 0, "", fmt.Errorf("database.max_conns must be 0 (sized from the role and worker.max_workers) or a positive number, not %d", maxConns)
	case maxConns > 0:
		return int32(maxConns), "database.max_conns", nil
	case strings.Contains(url, "pool_max_conns"):
		return 0, "database.url pool_max_conns", nil
	}
	return app.PoolSize(role, maxWorkers, procs), "role " + string(role) + " and worker.max_workers", nil
}

func connectPool(cmd *cobra.Command, v *viper.Viper, configure func(*pgxpool.Config, string) error) (*pgxpool.Pool, error) {
	ctx := cmd.Context()
	url := v.GetString("database.url")
	if url == "" && cmd.Flag(devDirFlag) != nil {
		devURL, err := devDatabaseURL(cmd)
		if err != nil {
			return nil, fmt.Errorf("database.url is not set (DATABASE_URL), and %w", err)
		}
		url = devURL
	}
	if url == "" {
		if cmd.Name() == "serve" {
			return nil, errors.New("database.url is not set: set DATABASE_URL (or OUTBOXD_DATABASE_URL), or run `outboxd dev` for an embedded database")
		}
		// Such a command (secrets) reads no `outboxd dev` directory: it
		// works on a server's database, with that server's settings.
		return nil, fmt.Errorf("database.url is not set: set DATABASE_URL (or OUTBOXD_DATABASE_URL) to the database of the outboxd `outboxd %s` is for, with its other settings (such as secrets.keys)", strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "))
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database.url: %w", err)
	}
	if configure != nil {
		if err := configure(cfg, url); err != nil {
			return nil, err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database.url: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to the database: %w", err)
	}
	return pool, nil
}

func newServeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API, the workers, or both",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			roleFlag, _ := cmd.Flags().GetString("role")
			role, err := app.ParseRole(roleFlag)
			if err != nil {
				return err
			}
			logger, err := newLogger(v, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg, err := appConfig(v)
			if err != nil {
				return err
			}
			warnNoMaxLifetime(logger, cfg, role)
			ctx := cmd.Context()
			pool, err := openServingPool(cmd, v, role, cfg.Worker.WithDefaults().MaxWorkers, logger)
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := migrations.Check(ctx, pool); err != nil {
				if errors.Is(err, migrations.ErrNotMigrated) {
					return &exitError{code: 2, err: fmt.Errorf("%w; run `outboxd migrate up` first", err)}
				}
				return err
			}
			a, err := app.New(cfg, role, pool, logger)
			if err != nil {
				return err
			}
			return a.Run(ctx, nil)
		},
	}
	cmd.Flags().String("role", "all", "all, api or worker")
	cmd.Flags().String("http-addr", "", "listen address (http.addr, default "+app.DefaultHTTPAddr+")")
	bindFlag(cmd, "http-addr", "http.addr")
	return cmd
}

func newMigrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply, revert or show database migrations (outboxd's and River's)",
	}
	addDevDirFlag(cmd.PersistentFlags())
	withPool := func(fn func(cmd *cobra.Command, pool *pgxpool.Pool) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			return withOwnerPool(cmd, func(_ *app.Config, pool *pgxpool.Pool) error { return fn(cmd, pool) })
		}
	}
	up := &cobra.Command{
		Use:   "up",
		Short: "Apply River's and outboxd's pending migrations",
		Args:  cobra.NoArgs,
		RunE: withPool(func(cmd *cobra.Command, pool *pgxpool.Pool) error {
			before, err := migrations.GetStatus(cmd.Context(), pool)
			if err != nil {
				return err
			}
			applied, err := migrations.Up(cmd.Context(), pool)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if before.RiverCurrent < before.RiverLatest {
				fmt.Fprintf(out, "applied River's migrations %d to %d (River's job tables)\n", before.RiverCurrent+1, before.RiverLatest)
			}
			for _, version := range applied {
				fmt.Fprintf(out, "applied %03d\n", version)
			}
			if len(applied) == 0 && before.RiverCurrent == before.RiverLatest {
				fmt.Fprintf(out, "database is up to date (River's migrations at version %d, outboxd's at %03d)\n",
					before.RiverLatest, migrations.All()[len(migrations.All())-1].Version)
			}
			return nil
		}),
	}
	down := &cobra.Command{
		Use:   "down",
		Short: "Revert outboxd migrations (the last one by default)",
		Args:  cobra.NoArgs,
		RunE: withPool(func(cmd *cobra.Command, pool *pgxpool.Pool) error {
			steps, _ := cmd.Flags().GetInt("steps")
			all, _ := cmd.Flags().GetBool("all")
			if steps < 1 {
				return errors.New("--steps must be at least 1")
			}
			reverted, err := migrations.Down(cmd.Context(), pool, steps, all)
			if err != nil {
				return err
			}
			for _, version := range reverted {
				fmt.Fprintf(cmd.OutOrStdout(), "reverted %03d\n", version)
			}
			if all {
				fmt.Fprintln(cmd.OutOrStdout(), "reverted River's migrations")
			}
			return nil
		}),
	}
	down.Flags().Int("steps", 1, "how many outboxd migrations to revert")
	down.Flags().Bool("all", false, "revert every outboxd migration and River's too (drops all data)")
	// --steps 2 --all would revert everything: refuse the pair rather
	// than let the flag that drops all data win.
	down.MarkFlagsMutuallyExclusive("steps", "all")
	status := &cobra.Command{
		Use:   "status",
		Short: "Show applied and pending migrations",
		Args:  cobra.NoArgs,
		RunE: withPool(func(cmd *cobra.Command, pool *pgxpool.Pool) error {
			st, err := migrations.GetStatus(cmd.Context(), pool)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, m := range migrations.All() {
				state := "pending"
				for _, v := range st.Applied {
					if v == m.Version {
						state = "applied"
					}
				}
				fmt.Fprintf(out, "outboxd %03d_%s\t%s\n", m.Version, m.Name, state)
			}
			fmt.Fprintf(out, "river   version %d of %d\n", st.RiverCurrent, st.RiverLatest)
			if st.Current() {
				fmt.Fprintln(out, "database is up to date")
			} else {
				fmt.Fprintln(out, "migrations pending: run `outboxd migrate up`")
			}
			return nil
		}),
	}
	cmd.AddCommand(up, down, status)
	return cmd
}
