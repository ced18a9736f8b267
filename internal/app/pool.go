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

// PoolSize is the database pool size a process of role needs when
// database.max_conns is not set:
//
//   - api: one connection per request being written, for about 2×GOMAXPROCS+4
//     handlers at once (at least 8), plus the waiter's LISTEN connection;
//   - worker: one for every fourth execute job, plus River's own
//     (riverConns). A job holds a connection only for its database steps,
//     never during the provider call, so against a real provider few are
//     in those steps at once; against an instant one the database is the
//     bound, and more connections only queue inside Postgres instead of in
//     the pool (measured with outboxd bench: 24, 60 and 120 connections for
//     200 workers did the same work). One per worker would also let a
//     single process exhaust Postgres's max_connections (default 100);
//   - all: the sum.
//
// procs is GOMAXPROCS.
func PoolSize(role Role, maxWorkers, procs int) int32 {
	api := max(8, 2*procs+4) + apiListenConns
	worker := (maxWorkers+3)/4 + riverConns
	switch role {
	case RoleAPI:
		return int32(api)
	case RoleWorker:
		return int32(worker)
	}
	return int32(api + worker)
}
