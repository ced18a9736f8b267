package main

import (
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/bench"
)

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure outboxd's paths against River's raw throughput, in one run on one database",
		Long: `bench measures, on one scratch database, one phase after another:

  1. River raw: --river-n (at least N) pre-inserted no-op jobs worked by
     --river-workers workers with a short fetch cooldown, the way River's
     own benchmark runs; then the same jobs each posting a message to a
     loopback Slack (River + provider call: the most an outboxd path can
     reach here; --skip river-call leaves it out);
  2. single: N allow-mode envelopes, one POST /v1/envelopes each, from
     --concurrency HTTP clients, executed on a loopback Slack; then invoke
     (REST): the same action through POST /v1/sessions/{id}/actions/invoke,
     each client in an agent session of its own and waiting for the result
     (--skip invoke leaves it out); then mcp tools/call: the same through
     the MCP front door, --concurrency MCP clients (plain Streamable HTTP
     clients in 2025-11-25 sessions, as the REST phases' are plain HTTP
     clients) each calling and waiting for the result (--skip mcp leaves
     it out);
  3. batch: N envelopes through POST /v1/envelopes/batch, --batch-size each;
  4. slow provider: the single path against a Slack answering after
     --provider-latency (0 skips it);
  5. offered rate: N single envelopes sent at --offered-rate per second
     (open loop: each at its time, whether or not the earlier ones were
     answered; 0 skips it), for the latency at a given load, after a
     second's worth that warms the pool and is left out of p50/p99;
  6. approval: --approvals require_approval envelopes approved one at a
     time on an idle queue, timed from the approve response to the call
     reaching Slack;
  7. with --backlog B: B envelopes left queued (their jobs scheduled an hour
     ahead, as a rate bucket's snooze leaves them), then single and batch
     again;
  8. with --flood F: one organization posts F envelopes through the batch
     endpoint while a second posts one envelope every 20ms until the flood
     has run; the second's p50/p99 is how long one organization's flood
     holds back another's actions.


Each phase reports actions/s (first request to last completion), its ratio
to River raw, enqueue→completed p50/p99, Postgres transactions per action
(pg_stat_database of the bench database; every phase starts and ends with
the pool's connections closed so their counts are flushed) and the peak RSS
of this process during the phase (which also runs the HTTP clients and the
loopback Slack). For the phases whose clients wait for each result (invoke,
mcp), a second table splits a call's time at its invocation's created_at,
its job's fetch and the invocation's started_at and completed_at; a last
line compares the mcp phase with single's actions/s and the REST invoke's
p50. The database is a new one on DATABASE_URL's server when set,
otherwise an embedded Postgres in a temporary directory.`,
		Args: cobra.NoArgs,
		RunE: runBench,
	}
	cmd.Flags().Int("n", 2000, "actions per phase (and River's no-op jobs)")
	cmd.Flags().Int("concurrency", 64, "concurrent HTTP clients of the single-envelope phases")
	cmd.Flags().Int("workers", 0, "worker.max_workers of outboxd (default: the configured value)")
	cmd.Flags().Int("river-workers", 1000, "MaxWorkers of the River raw phase")
	cmd.Flags().Int("river-n", 20000, "no-op jobs of the River raw phase, at least --n (a phase of a fraction of a second would measure mostly its own start)")
	cmd.Flags().Int("batch-size", 1000, "envelopes per batch request (at most 1000)")
	cmd.Flags().Duration("provider-latency", 150*time.Millisecond, "how long the loopback Slack takes to answer in the slow-provider phase (0 skips it)")
	cmd.Flags().Int("offered-rate", 500, "envelopes per second of the offered-rate phase (0 skips it)")
	cmd.Flags().Int("approvals", 20, "require_approval invocations approved one by one (0 skips the phase)")
	cmd.Flags().Int("backlog", 0, "envelopes left queued before the single and batch phases are run again (0 skips it)")
	cmd.Flags().Int("flood", 0, "envelopes one organization posts through the batch endpoint while another posts one every 20ms, whose wait is measured (0 skips it)")
	cmd.Flags().StringSlice("skip", nil, "phases to leave out: single, invoke, mcp, batch, river-call (the other phases are left out by their flag's 0)")
	cmd.Flags().String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	cmd.Flags().String("profile-phase", "", "narrow --cpuprofile to one phase: single, invoke, mcp, batch, slow, offered, backlog-single or backlog-batch")
	cmd.Flags().String("memprofile", "", "write a profile of the whole run's allocations to this file")
	// Only the test shortens it, trading exact transaction counts for time.
	cmd.Flags().Duration("stats-settle", 1500*time.Millisecond, "wait before waking listeners to flush their statistics")
	_ = cmd.Flags().MarkHidden("stats-settle")
	return cmd
}

// runBench reads the flags and the configuration into a bench.Config and
// runs the bench.
func runBench(cmd *cobra.Command, _ []string) error {
	v, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	flags := cmd.Flags()
	var cfg bench.Config
	cfg.N, _ = flags.GetInt("n")
	cfg.Concurrency, _ = flags.GetInt("concurrency")
	cfg.Workers, _ = flags.GetInt("workers")
	cfg.RiverWorkers, _ = flags.GetInt("river-workers")
	cfg.RiverN, _ = flags.GetInt("river-n")
	cfg.BatchSize, _ = flags.GetInt("batch-size")
	cfg.Approvals, _ = flags.GetInt("approvals")
	cfg.Backlog, _ = flags.GetInt("backlog")
	cfg.Flood, _ = flags.GetInt("flood")

	cfg.OfferedRate, _ = flags.GetInt("offered-rate")
	cfg.ProviderLatency, _ = flags.GetDuration("provider-latency")
	cfg.StatsSettle, _ = flags.GetDuration("stats-settle")
	cfg.Skip, _ = flags.GetStringSlice("skip")
	cfg.CPUProfile, _ = flags.GetString("cpuprofile")
	cfg.MemProfile, _ = flags.GetString("memprofile")
	cfg.ProfilePhase, _ = flags.GetString("profile-phase")
	if cfg.Workers == 0 {
		cfg.Workers = v.GetInt("worker.max_workers")
	}
	if err := cfg.Check(); err != nil {
		return err
	}

	// outboxd's own warnings and errors go to stderr; --log-level shows more.
	if f := cmd.Flag("log-level"); (f == nil || !f.Changed) && os.Getenv("OUTBOXD_LOG_LEVEL") == "" {
		v.Set("log.level", "warn")
	}
	if cfg.Logger, err = newLogger(v, cmd.ErrOrStderr()); err != nil {
		return err
	}
	configured, err := appConfig(v)
	if err != nil {
		return err
	}
	cfg.Worker = configured.Worker
	cfg.ServerURL = v.GetString("database.url")
	maxConns := v.GetInt("database.max_conns")
	cfg.PoolSize = func(dbURL string) (int32, error) {
		size, _, err := servingPoolSize(maxConns, dbURL, app.RoleAll, cfg.Workers, runtime.GOMAXPROCS(0))
		return size, err
	}
	cfg.Out, cfg.Err = cmd.OutOrStdout(), cmd.ErrOrStderr()
	return bench.Run(cmd.Context(), cfg)
}
