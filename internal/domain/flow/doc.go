// Package flow enforces rate buckets and concurrency limits shared by every
// worker process on one Postgres database, with no other coordination
// service.
//
// # Buckets
//
// A bucket is a token bucket: Rate tokens per Interval, at most Burst held.
// A global bucket is one row for everyone; an org bucket is one row per
// organization. Rows live in flow_buckets and are created full on first use.
// The level is stored as tokens at refilled_at and brought up to date from
// the database clock (now()) on every take, so processes whose clocks
// disagree still agree on the bucket. Acquire takes one token; when there is
// none it takes nothing and returns how long until there will be one, and a
// River worker snoozes the job for that long instead of holding a slot.
//
// A bucket with MaxConcurrency also hands out leases: at most MaxConcurrency
// holders at once, each lease expiring LeaseTTL after it was granted so that
// the slots of a process that died come back on their own. The leases are
// stored in the bucket's row, so the token and the slot are taken together by
// the one statement that holds the row lock. A holder that acquires again (a
// retried job) refreshes its lease instead of taking a second slot; it still
// takes a token, because it makes another call.
//
// # One organization's share
//
// A global bucket's slots are every organization's, and a lease is held for
// the whole call: one organization whose calls hang until their timeout, or
// that simply has many, would hold every slot and stop every other's calls.
// So one organization holds at most Config.MaxOrgShare of a global bucket's
// MaxConcurrency (three quarters by default, rounded down, at least one
// slot), counted across processes: each lease records its organization in
// the row (lease_orgs), and the statement that grants leases refuses a
// holder whose organization holds its share. Such a holder takes nothing
// and is told to wait as for a full bucket. Buckets kept per organization or
// source are one organization's already and have no share. Tokens have none
// either: a token is taken for an instant, not held, and a call refused one
// holds nothing and comes back in turn, so an organization flooding a bucket
// delays the others' calls (by about its backlog over the rate) but cannot
// hold them off; a bucket kept per organization gives each its own rate.
//
// Drain answers a provider's 429: the bucket is emptied and blocked until
// now+d, never shortening a block that ends later, so the jobs of every
// process wait, not only the one that was refused.
//
// # Round trips
//
// Acquire, with or without concurrency, is one statement and so one round
// trip: FlowAcquire locks the row with SELECT ... FOR UPDATE, which returns
// the latest committed version even after waiting for the lock, decides, and
// updates the row in a data-modifying CTE only when it grants. The Acquires
// of one bucket that a process makes while such a statement is under way
// wait for it and then go together, in the next one (internal/platform/batch): it
// grants to as many of them, in order, as there are tokens and slots (passing
// over those whose organization holds its share), so a
// busy bucket's row is locked once per batch rather than once per job, and
// what a caller is granted is exactly what it would have been granted alone.
// The first Acquire of a bucket and scope key in a database costs three
// (the row is missing, FlowBucketCreate, FlowAcquire again). Release and
// Drain are one each. pgx prepares a statement the first time a connection
// runs it, which adds one round trip per statement and connection, not per
// call.
//
// # Local pre-check
//
// Before asking Postgres, Acquire consults what this process alone knows
// about the bucket: a golang.org/x/time/rate limiter with the bucket's rate
// and burst that records every token Postgres granted to this process, and
// the time until which Postgres last said the bucket has no token (or this
// process drained it). The limiter is an upper bound of the shared bucket: it
// starts full, refills at the same rate and is charged only for this
// process's takes, while the shared bucket is charged for every process's.
// So when the limiter holds no whole token, or the last answer's wait has not
// run out, the shared bucket certainly has no token either, and Acquire
// returns the wait without a round trip. The check only ever refuses; every
// token is granted by Postgres. Its wait is a lower bound of the real one
// (the limiter's clock starts no later than the row's), so a caller coming
// back after it may be told to wait a little longer. A wait for a
// concurrency slot is not remembered, since a Release elsewhere can free a
// slot at any moment.
//
// Every process must configure a bucket alike: each passes its own rate and
// burst to Postgres and checks locally against them.
//
// The statements are package flowstore's; this package decides what to ask
// and what the answers mean.
package flow
