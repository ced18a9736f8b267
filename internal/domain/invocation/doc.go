// Package invocation owns an invocation's state: the domain type with its
// typed Status, and every transition — create (with its River job),
// approve, deny, cancel, expire, start, complete, fail, skip, retry and
// snooze bookkeeping, replay and discard.
//
// Each transition is one statement run in the caller's transaction. It
// locks the row, changes it only when it is in a state the transition
// allows (a lost race changes nothing and returns ErrConflict), and appends
// the invocation's next row to invocation_events: the activity timeline.
// A trigger on that table announces the events listeners wait for (a
// request for approval, a decision, an end) with pg_notify on
// EventsChannel in the same transaction, so a listener never hears of a
// change that rolled back and never misses one that committed.
//
// The sqlc rows stay in this package; the API and the workers see
// Invocation and Event.
package invocation
