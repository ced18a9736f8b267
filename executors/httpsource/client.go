package httpsource

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/outboxd/outboxd/internal/platform/netguard"
	"github.com/outboxd/outboxd/internal/platform/tracing"
)

// IdempotencyKeyHeader is the request header that carries
// executors.ExecContext.IdempotencyKey to a provider. It is not
// "Idempotency-Key": net/http takes a request with that header as safe to
// resend and would then repeat a POST on its own after some connection
// failures, behind the worker's back.
const IdempotencyKeyHeader = "X-Outboxd-Idempotency-Key"

// CheckBaseURL checks raw, the configured BaseURL of the source with id
// source, and returns it parsed so the caller can add checks of its own. It
// must be an http or https URL with a host, without a query or fragment,
// not even an empty one ("…/api?" or "…/api#"), since request paths are
// appended to it as text and would land in the query or the fragment, and
// without credentials (user:password@), which the token in each request
// replaces and which errors would show. Error texts name the setting,
// providers.<source>.base_url, and what is wrong with it, never the value
// nor a part of it: a refused URL may hold a password or a token (in its
// user:password@, its query, or a password a missing host makes the port).
func CheckBaseURL(source, raw string) (*url.URL, error) {
	key := "providers." + source + ".base_url"
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s is not a valid URL", key)
	case u.User != nil:
		return nil, fmt.Errorf("%s must not carry credentials (user:password@)", key)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%s must be an http or https URL", key)
	case u.Host == "":
		return nil, fmt.Errorf("%s has no host", key)
	case strings.ContainsAny(raw, "?#"):
		return nil, fmt.Errorf("%s must not have a query or fragment", key)
	}
	return u, nil
}

// maxRedirects is how many redirects a client follows, as Go's default.
const maxRedirects = 10

// KeepingMethod returns a copy of c that does not follow a redirect that
// would change the request's method: Go follows a 301, 302 or 303 answer
// to a POST, PUT or PATCH with a GET, without the body, and the write
// would then be reported done on the answer of a read (a Sentry
// update_issue answered with the issue as it was). The redirect is then
// the answer, which the source classifies as a refusal (Statuses.Error).
// Other redirects are followed as c follows them.
func KeepingMethod(c *http.Client) *http.Client {
	out := *c
	next := c.CheckRedirect
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		switch {
		case req.Method != via[0].Method:
			return http.ErrUseLastResponse
		case next != nil:
			return next(req, via)
		case len(via) >= maxRedirects:
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &out
}

// NewClient returns a client on a transport of its own
// (netguard.NewTransport: http.DefaultTransport's settings, an answer's
// headers bounded at 1 MiB), so idle connections to a provider are not
// shared with, or closed by, unrelated code using the default client. It has no overall timeout: deadlines come from the
// context of each request. It keeps up to 256 idle connections to a
// provider: over HTTP/1.1 each call in flight holds one, and a call that
// finds the idle pool full closes its connection, so the next dials, and
// shakes hands, again (HTTP/2 providers multiplex calls on a few). With
// the default 16, most of 200 concurrent calls to one host re-dialled.
// A call made inside a trace carries its traceparent (tracing.Transport).
// It does not follow a redirect that would change a write into a read
// (KeepingMethod).
func NewClient() *http.Client {
	transport := netguard.NewTransport()
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 1024, 256
	return KeepingMethod(&http.Client{Transport: tracing.Transport(transport)})
}
