// Package invocation defines an invocation's state: the domain type with
// its typed Status, the events of its timeline, the state machine of its
// transitions (Transitions) — create (with its River job), approve, deny,
// cancel, expire, start, complete, fail, skip, retry and snooze
// bookkeeping, replay and discard — the feeds' notices and cursors, and the
// arguments of the store that makes the transitions (package
// invocationstore, the one that runs their SQL).
package invocation
