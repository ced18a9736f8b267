// Package worker runs everything that touches the outside world: the River
// client, the execute and expiry jobs, the retry policy and the periodic
// sweep. The API layer only inserts, releases and cancels jobs; the workers
// here are the only executors.
package worker
