package batch_test

import "time"

const (
	timeout = 5 * time.Second
	tick    = time.Millisecond
)
