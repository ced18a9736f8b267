package httpserver

import (
	"cmp"
	"errors"
	"time"
)

// Config tunes the server.
type Config struct {
	// ReadHeaderTimeout bounds reading a request's header, from its first
	// byte. Default 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, header and body, from its
	// first byte. Default 30s.
	ReadTimeout time.Duration
	// WriteTimeout bounds a response, from the end of its request's header
	// to the end of writing it (event streams and waiting handlers excepted,
	// see the package comment). Default 60s.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request. Default 120s.
	IdleTimeout time.Duration
	// MaxConns caps the connections the server holds at once. 0 derives it
	// from the process's open-file limit: half of it (the rest is for the
	// database pools, provider calls and plugins), at most 10000.
	MaxConns int
	// MaxOrgRequests caps the requests one organization has in progress in
	// this process (OrgLimiter); beyond it, 429. 0 derives three quarters
	// of MaxConns, so that other organizations always find connections.
	MaxOrgRequests int
	// UnauthenticatedRate is how many requests per second one client
	// address may send without a valid bearer token (public routes, missing
	// or invalid tokens); beyond it, 429. 0 turns the cap off. Default 10.
	UnauthenticatedRate float64
	// UnauthenticatedBurst is how many such requests an address may send at
	// once. Default 50.
	UnauthenticatedBurst int
	// TrustForwardedFor takes a client's address from the last entry of
	// X-Forwarded-For instead of the connection's peer. Turn on only when
	// every request reaches outboxd through a proxy that appends it;
	// otherwise a client picks its own address. Default off. On, the
	// origin clients reached comes from the proxy's X-Forwarded-Proto and
	// X-Forwarded-Host too (Origin).
	TrustForwardedFor bool
}

// DefaultUnauthenticatedRate is the configuration's default of
// UnauthenticatedRate. It is not applied by WithDefaults, where 0 means no
// cap.
const DefaultUnauthenticatedRate = 10

// maxDerivedConns bounds MaxConns when it is derived from the open-file
// limit.
const maxDerivedConns = 10000

// WithDefaults returns a copy with unset fields defaulted, MaxConns
// derived when 0.
func (c Config) WithDefaults() Config {
	out := c
	out.ReadHeaderTimeout = cmp.Or(c.ReadHeaderTimeout, 10*time.Second)
	out.ReadTimeout = cmp.Or(c.ReadTimeout, 30*time.Second)
	out.WriteTimeout = cmp.Or(c.WriteTimeout, 60*time.Second)
	out.IdleTimeout = cmp.Or(c.IdleTimeout, 120*time.Second)
	if out.MaxConns == 0 {
		out.MaxConns = derivedMaxConns()
	}
	if out.MaxOrgRequests == 0 {
		out.MaxOrgRequests = max(1, out.MaxConns*3/4)
	}
	out.UnauthenticatedBurst = cmp.Or(c.UnauthenticatedBurst, 50)
	return out
}

// Validate refuses negative settings.
func (c *Config) Validate() error {
	switch {
	case c.ReadHeaderTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0:
		return errors.New("http timeouts must be positive durations such as 10s or 2m")
	case c.MaxConns < 0:
		return errors.New("http.max_conns must be 0 (derived from the open-file limit) or positive")
	case c.MaxOrgRequests < 0:
		return errors.New("http.max_org_requests must be 0 (three quarters of http.max_conns) or positive")
	case c.UnauthenticatedRate < 0 || c.UnauthenticatedBurst < 0:
		return errors.New("http.unauthenticated_rate and http.unauthenticated_burst must not be negative")
	}
	return nil
}

// derivedMaxConns is half of the open-file limit, at least 16 and at most
// maxDerivedConns.
func derivedMaxConns() int {
	limit := openFileLimit()
	if limit <= 0 {
		return maxDerivedConns
	}
	return min(max(int(limit/2), 16), maxDerivedConns)
}
