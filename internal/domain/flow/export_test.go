package flow

// Queued is how many Acquires of the bucket and scope key wait for the
// statement under way to return.
func (l *Limiter) Queued(bucket, key string) int {
	return l.local(l.buckets[bucket], key).takes.Queued()
}
