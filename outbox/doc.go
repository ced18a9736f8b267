// Package outbox is the write side of outboxd. It validates a request,
// resolves its policy mode and, in one Postgres transaction, records the
// invocation and inserts (or releases, or cancels) its River job. It never
// calls a provider: River workers in package worker are the only executors.
//
// The HTTP API over this package lives in internal/api.
package outbox
