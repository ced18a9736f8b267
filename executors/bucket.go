package executors

import "time"

// BucketConfig defines one rate bucket, the token bucket a provider's jobs
// take a token from before each call (see package internal/domain/flow,
// which enforces it across every worker process). Every process must use
// the same values for a bucket: each enforces the rate and burst it was
// given.
type BucketConfig struct {
	// Name identifies the bucket, for example "slack.minute". Required and
	// unique.
	Name string
	// Rate is how many tokens are added per Interval. Required, positive.
	Rate int
	// Interval is the period Rate is counted over. Default 1s.
	Interval time.Duration
	// Burst is the bucket's capacity, the most tokens taken at once after a
	// quiet period. Required, at least 1.
	Burst int
	// MaxConcurrency is how many leases may be held at once; 0 means no
	// limit and no leases.
	MaxConcurrency int
	// Scope is whether the bucket is shared by everyone or kept per
	// organization. Default ScopeGlobal.
	Scope Scope
}

// Scope says whom a bucket's tokens are shared by.
type Scope string

const (
	// ScopeGlobal is one bucket for every organization.
	ScopeGlobal Scope = "global"
	// ScopeOrg is one bucket per organization.
	ScopeOrg Scope = "org"
	// ScopeSource is one bucket per organization and source, so each of an
	// organization's MCP connectors gets a bucket of its own.
	ScopeSource Scope = "source"
)

// ScopeKey is the key to pass to the limiter's Acquire and Drain for a call
// of org to source: "" for a global bucket, the organization for an org
// one, the organization and the source for a source one.
func (b BucketConfig) ScopeKey(org, source string) string {
	switch b.Scope {
	case ScopeGlobal:
		return ""
	case ScopeSource:
		return org + "/" + source
	}
	return org
}
