package app

// Connections a process needs besides its request handlers and job workers.
const (
	// apiListenConns is the waiter's LISTEN connection, held for the life of
	// an API process.
	apiListenConns = 1
	// riverConns is what River takes besides the workers' own queries: its
	// notifier's LISTEN connection, a producer fetching for each of the two
	// queues, the completer's batches, and the leader's maintenance
	// services (elector, rescuer, cleaner, scheduler, periodic enqueuer).
	riverConns = 8
)

// maxWorkerConns caps the connections of a worker's execute jobs. A job's
// hot steps go through group commits (a bucket's token requests, the
// begins, the completions), each batch on one connection, so a few
// connections serve any number of workers; the rest are for the steps that
// run alone (a gate's start, a retry, a failure, a snooze).
const maxWorkerConns = 48

// PoolSize is the database pool size a process of role needs when
// database.max_conns is not set:
//
//   - api: one connection per request being written, for about 2×GOMAXPROCS+4
//     handlers at once (at least 8), plus the waiter's LISTEN connection;
//   - worker: one for every fourth execute job, at most maxWorkerConns,
//     plus River's own (riverConns). A job holds a connection only for its
//     database steps, never during the provider call, and its hot steps
//     share connections in group commits; against an instant provider the
//     database is the bound, and more connections only queue inside
//     Postgres instead of in the pool (measured with outboxd bench: 24, 60
//     and 120 connections for 200 workers did the same work, and 56 did
//     what 258 did for 1000). One per worker would also let a single
//     process exhaust Postgres's max_connections (default 100);
//   - all: the sum.
//
// procs is GOMAXPROCS.
func PoolSize(role Role, maxWorkers, procs int) int32 {
	api := max(8, 2*procs+4) + apiListenConns
	worker := min((maxWorkers+3)/4, maxWorkerConns) + riverConns
	switch role {
	case RoleAPI:
		return int32(api)
	case RoleWorker:
		return int32(worker)
	}
	return int32(api + worker)
}
