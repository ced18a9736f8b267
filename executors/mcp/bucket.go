package mcp

import (
	"time"

	"github.com/outboxd/outboxd/executors"
)

// Bucket is the rate bucket the jobs of every connector take unless a
// request names another. Its scope is the source, so each connector gets a
// bucket of this shape to itself.
var Bucket = executors.BucketConfig{Name: "connector", Rate: 10, Interval: time.Second, Burst: 10, MaxConcurrency: 5, Scope: executors.ScopeSource}
