// Package relay feeds invocation notices to their consumers (webhooks,
// Slack approvals): one loop over one cursor table, relay_cursors, keyed
// by the consumer's name (relaystore keeps it).
//
// For each consumer a River job runs periodically on the leader. It reads
// the notices after the consumer's cursor (in the (xid, id) order of
// migration 010, up to the snapshot horizon), has the consumer turn them
// into River jobs, and inserts those jobs and moves the cursor in one
// transaction. A notice whose transaction rolled back is never relayed; a
// notice that committed is relayed to each consumer once, in feed order,
// even if a process dies mid-way; a consumer that fails keeps its cursor
// and is offered the same notices on its next run, and the others go on.
// The transitions of internal/domain/invocation stay one statement each,
// with no consumer on their path.
//
// Which events are notices is the notice column of invocation_events
// (migration 024). Adding a channel is one function, Consumer.Jobs, and
// one call to Relay.Add.
package relay

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/relay/relaystore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Batch is how many notices the relay reads for a consumer per
// transaction.
const Batch = 500

// maxBatches is how many batches one run relays before it leaves the rest
// to the next run.
const maxBatches = 20

// Consumer is a channel notices are relayed to.
type Consumer struct {
	// Name keys the consumer's cursor (relay_cursors.consumer) and its
	// relay job. A consumer's cursor outlives its process: renaming a
	// consumer starts it afresh, at the horizon.
	Name string
	// Every is how often its relay job runs. Default 1s.
	Every time.Duration
	// Queue is the River queue its relay job runs on ("" for River's
	// default).
	Queue string
	// Scope says whose notices the consumer wants, read in the relay's
	// transaction before the notices. Notices out of scope are passed over
	// for good. Nil: every organization's.
	Scope func(ctx context.Context, tx pgx.Tx) (invocation.FeedScope, error)
	// Jobs turns a batch of notices, oldest first, into the River jobs
	// they make. It runs in the relay's transaction and may write rows of
	// its own there; the jobs are inserted in it, in their order, and the
	// cursor moves past the batch when it commits. An error rolls all of
	// that back: the consumer is offered the same notices on its next run.
	Jobs func(ctx context.Context, tx pgx.Tx, notices []invocation.FeedItem) ([]river.InsertManyParams, error)
}

// Relay runs the consumers' relay jobs. It is a worker.JobSet.
type Relay struct {
	pool      *pgxpool.Pool
	cursors   *relaystore.Store
	store     *invocationstore.Store
	consumers []*Consumer
}

// New returns a Relay that works through pool (the owner's: it reads
// every organization's notices).
func New(pool *pgxpool.Pool) *Relay {
	return &Relay{pool: pool, cursors: relaystore.New(), store: invocationstore.New(nil)}
}

// Add registers a consumer. Names are unique; Jobs is required.
func (r *Relay) Add(c Consumer) {
	if c.Name == "" || c.Jobs == nil {
		panic("relay: a consumer needs a name and Jobs")
	}
	if r.consumer(c.Name) != nil {
		panic("relay: two consumers named " + c.Name)
	}
	c.Every = cmp.Or(c.Every, time.Second)
	r.consumers = append(r.consumers, &c)
}

func (r *Relay) consumer(name string) *Consumer {
	for _, c := range r.consumers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Args relays the notices after a consumer's cursor to it.
type Args struct {
	Consumer string `json:"consumer"`
}

// Kind implements river.JobArgs.
func (Args) Kind() string { return "relay" }

// InsertOpts keeps at most one relay job per consumer waiting or running,
// and tries it once: the next run starts over from the cursor.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateRetryable, rivertype.JobStateScheduled,
	}}}
}

// Worker runs Args.
type Worker struct {
	river.WorkerDefaults[Args]
	relay *Relay
}

// Work relays batches until one comes back short (the consumer has caught
// up with the horizon) or maxBatches are done; the next run goes on from
// there.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	c := w.relay.consumer(job.Args.Consumer)
	if c == nil {
		return fmt.Errorf("relay: no consumer named %q", job.Args.Consumer)
	}
	for range maxBatches {
		n, err := w.relay.once(ctx, c)
		if err != nil || n < Batch {
			return err
		}
	}
	return nil
}

// once moves one batch of notices past the consumer's cursor, inserting
// the jobs they make in the same (repeatable read) transaction, and
// returns how many notices it read.
func (r *Relay) once(ctx context.Context, c *Consumer) (int, error) {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return 0, err
	}
	return dbutil.WithTxV(ctx, r.pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
		// The scope, the notices and what Jobs reads are read in one
		// snapshot. Read one statement at a time, an organization whose
		// scope (its first webhook endpoint) committed between the scope
		// and the notices would have its notices of that moment read, out
		// of scope, and passed over for good.
		if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
			return 0, fmt.Errorf("%s relay: %w", c.Name, err)
		}
		after, err := r.cursors.Lock(ctx, tx, c.Name)
		if err != nil {
			return 0, err
		}
		scope := invocation.FeedScope{All: true}
		if c.Scope != nil {
			if scope, err = c.Scope(ctx, tx); err != nil {
				return 0, fmt.Errorf("%s relay scope: %w", c.Name, err)
			}
		}
		items, next, err := r.store.FeedAll(ctx, tx, after, scope, Batch)
		if err != nil {
			return 0, err
		}
		if len(items) > 0 {
			jobs, err := c.Jobs(ctx, tx, items)
			if err != nil {
				return 0, fmt.Errorf("%s relay: %w", c.Name, err)
			}
			if len(jobs) > 0 {
				if _, err := client.InsertManyTx(ctx, tx, jobs); err != nil {
					return 0, fmt.Errorf("inserting %s jobs: %w", c.Name, err)
				}
			}
		}
		if next != after {
			if err := r.cursors.Advance(ctx, tx, c.Name, next); err != nil {
				return 0, err
			}
		}
		return len(items), nil
	})
}

// AddWorkers registers the relay worker.
func (r *Relay) AddWorkers(workers *river.Workers) {
	river.AddWorker(workers, &Worker{relay: r})
}

// Queues: the consumers' queues are their own packages'.
func (r *Relay) Queues() map[string]river.QueueConfig { return nil }

// PeriodicJobs runs each consumer's relay job every Consumer.Every.
func (r *Relay) PeriodicJobs() []*river.PeriodicJob {
	jobs := make([]*river.PeriodicJob, 0, len(r.consumers))
	for _, c := range r.consumers {
		args, opts := Args{Consumer: c.Name}, &river.InsertOpts{Queue: c.Queue}
		jobs = append(jobs, river.NewPeriodicJob(river.PeriodicInterval(c.Every),
			func() (river.JobArgs, *river.InsertOpts) { return args, opts },
			&river.PeriodicJobOpts{RunOnStart: true, ID: c.Name + "_relay"}))
	}
	return jobs
}
