package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/outboxd/outboxd/internal/platform/netguard"
)

const (
	// maxResponseBytes bounds each HTTP response body read from a connector.
	// The SDK reads JSON answers whole, so without it a hostile server could
	// exhaust memory; tool lists and results are far smaller.
	maxResponseBytes = 16 << 20

	// cleanupTimeout bounds, all together, the requests the SDK sends to
	// tidy up once an operation is over: the notification cancelling a
	// request abandoned at its deadline, which lets the server stop the
	// tool, and the DELETE ending the session. The SDK allows five seconds
	// for each; a server that stopped answering should not hold a worker
	// that long after its call already failed.
	cleanupTimeout = time.Second

	// maxRetryAfter caps a Retry-After header, so a bogus value cannot park
	// an invocation for days.
	maxRetryAfter = time.Hour

	// defaultRateLimitWait is how long to wait after a 429 without a usable
	// Retry-After, as for the providers: without it the retries, a second
	// apart and doubling, would spend every attempt while the server is
	// still limiting, and the connector's bucket would not be drained.
	defaultRateLimitWait = 30 * time.Second

	// sessionIDHeader is the streamable HTTP transport's session header.
	sessionIDHeader = "Mcp-Session-Id"

	// maxAttemptRequests bounds the HTTP requests of one attempt: its own
	// (initialize, the initialized notification, up to maxToolPages pages
	// of tools/list, a cancellation, the DELETE) and the answers to what
	// the server asks of the client (a ping, roots/list), each of which the
	// SDK POSTs. A server asking without end, thousands of pings in one
	// answer, would otherwise have the worker send a request for each.
	maxAttemptRequests = maxToolPages + 20
)

// errResponseTooLarge is the read error of a body past maxResponseBytes.
var errResponseTooLarge = fmt.Errorf("response body exceeds %d bytes", maxResponseBytes)

// errTooManyRequests is the error of a request past maxAttemptRequests,
// which is not sent.
var errTooManyRequests = fmt.Errorf("more than %d requests in one operation", maxAttemptRequests)

// attempt is the HTTP side of one connect-and-operate attempt against a
// connector: it adds the auth header, bounds bodies, and records what the
// SDK's errors do not carry (status codes, refused addresses, whether a
// session was lost) so failures can be classified. It is used by one
// attempt only.
type attempt struct {
	// ctx is the operation's context. Requests sent once it is done, and
	// DELETEs, are cleanup.
	ctx    context.Context
	base   http.RoundTripper
	origin *url.URL
	// header and secret are the auth header, empty for AuthNone.
	header string
	secret string

	mu          sync.Mutex
	cleanupBy   time.Time
	requests    int
	flooded     bool
	frozen      bool
	status      int
	retryAfter  time.Duration
	transport   error
	notAllowed  error
	sessionLost bool
	tooLarge    bool
}

// outcome is what an attempt observed up to the moment its operation
// returned.
type outcome struct {
	// status is the status of the last response, 0 when the last request
	// got no response.
	status     int
	retryAfter time.Duration
	// transport is the error of the last request when it got no response.
	transport error
	// notAllowed is set when the dial guard refused an address.
	notAllowed error
	// sessionLost is set when a request carrying a session id got a 404.
	sessionLost bool
	// tooLarge is set when a response body exceeded maxResponseBytes.
	tooLarge bool
	// flooded is set when the attempt would have sent more than
	// maxAttemptRequests requests.
	flooded bool
}

// freeze stops recording and returns what was observed. Requests made after
// the operation returned, like the session DELETE, cannot then mask the
// failure being classified.
func (a *attempt) freeze() outcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.frozen = true
	return outcome{
		status:      a.status,
		retryAfter:  a.retryAfter,
		transport:   a.transport,
		notAllowed:  a.notAllowed,
		sessionLost: a.sessionLost,
		tooLarge:    a.tooLarge,
		flooded:     a.flooded,
	}
}

// RoundTrip implements http.RoundTripper.
func (a *attempt) RoundTrip(req *http.Request) (*http.Response, error) {
	if !a.count() {
		return nil, errTooManyRequests
	}
	if a.header != "" && sameOrigin(req.URL, a.origin) {
		req = req.Clone(req.Context())
		req.Header.Set(a.header, a.secret)
	}

	cancel := context.CancelFunc(func() {})
	if req.Method == http.MethodDelete || a.ctx.Err() != nil {
		var ctx context.Context
		ctx, cancel = context.WithDeadline(req.Context(), a.cleanupDeadline())
		req = req.WithContext(ctx)
	}

	resp, err := a.base.RoundTrip(req)
	a.record(req, resp, err)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, remaining: maxResponseBytes, onClose: cancel, onTooLarge: a.markTooLarge}
	return resp, nil
}

// count counts a request and reports whether it may be sent: whether it
// is within maxAttemptRequests. The first one past it marks the attempt
// flooded, unless its operation already returned.
func (a *attempt) count() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests++
	if a.requests <= maxAttemptRequests {
		return true
	}
	if !a.frozen {
		a.flooded = true
	}
	return false
}

// cleanupDeadline returns the deadline shared by cleanup requests, set by
// the first of them.
func (a *attempt) cleanupDeadline() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cleanupBy.IsZero() {
		a.cleanupBy = time.Now().Add(cleanupTimeout)
	}
	return a.cleanupBy
}

func (a *attempt) record(req *http.Request, resp *http.Response, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Only POSTs carry the operation. The DELETE ending the session can be
	// sent while a failure is still being reported, when the SDK closes a
	// broken connection on its own, and must not mask it.
	if a.frozen || req.Method != http.MethodPost {
		return
	}
	if err != nil {
		var notAllowed *netguard.AddrError
		if errors.As(err, &notAllowed) {
			a.notAllowed = notAllowed
		}
		a.status, a.retryAfter, a.transport = 0, 0, err
		return
	}
	a.status, a.transport = resp.StatusCode, nil
	a.retryAfter = parseRetryAfter(resp.Header)
	if resp.StatusCode == http.StatusNotFound && req.Header.Get(sessionIDHeader) != "" {
		a.sessionLost = true
	}
}

func (a *attempt) markTooLarge() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.frozen {
		a.tooLarge = true
	}
}

// limitedBody fails reads past a byte budget instead of truncating, so an
// oversized answer is an error rather than a corrupt message.
type limitedBody struct {
	rc         io.ReadCloser
	remaining  int64
	onClose    func()
	onTooLarge func()
	closeOnce  sync.Once
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.remaining <= 0 {
		// Probe for one more byte: a body of exactly the budget is fine.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.onTooLarge()
			return 0, errResponseTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := b.rc.Read(p)
	b.remaining -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error {
	err := b.rc.Close()
	b.closeOnce.Do(b.onClose)
	return err
}

// parseRetryAfter reads Retry-After as a delay in seconds, capped at
// maxRetryAfter. Absent, zero, negative and HTTP-date values give 0.
func parseRetryAfter(header http.Header) time.Duration {
	secs, err := strconv.ParseInt(strings.TrimSpace(header.Get("Retry-After")), 10, 64)
	if err != nil || secs <= 0 {
		return 0
	}
	if secs > int64(maxRetryAfter/time.Second) {
		return maxRetryAfter
	}
	return time.Duration(secs) * time.Second
}

// sameOrigin reports whether u has the scheme and host of origin, so the
// connector secret is only ever sent to the server it was configured for
// and not to a host a redirect points at.
func sameOrigin(u, origin *url.URL) bool {
	return strings.EqualFold(u.Scheme, origin.Scheme) && strings.EqualFold(u.Host, origin.Host)
}
