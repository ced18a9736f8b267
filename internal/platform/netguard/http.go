package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/outboxd/outboxd/internal/platform/tracing"
)

// MaxRedirects bounds the redirects followed for one request. The servers
// an organization names have no reason to redirect more than once or
// twice; each hop is checked again by CheckURL and by the dial guard.
const MaxRedirects = 5

// CheckURL statically checks a URL an organization chose (an MCP connector,
// a webhook endpoint), as the API does before saving one: it must be
// absolute http or https with a host and no user info, and, unless
// allowPrivate, its host must not be a literal address in a refused range.
// Host names are not resolved here: the dial guard (Control) checks the
// addresses they resolve to on every connection, including after
// redirects, so a name cannot be pointed at an internal address later.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL: %w", errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL scheme %q is not allowed: use http or https", u.Scheme)
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return errors.New("URL has no host")
	}
	if u.User != nil {
		return errors.New("URL must not contain user info: put credentials in the connector's auth")
	}
	if allowPrivate {
		return nil
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil && !AddrAllowed(addr) {
		return fmt.Errorf("connector URL not allowed: %w", &AddrError{Addr: addr})
	}
	return nil
}

// Guard returns a copy of tr that dials through a net.Dialer whose Control
// refuses internal addresses, with proxies disabled: through a proxy, the
// guard would only see the proxy's address and the proxy would resolve the
// server's name itself. tr's own TLS dialers are dropped, the deprecated
// DialTLS too, since net/http prefers either to DialContext for https.
func Guard(tr *http.Transport) *http.Transport {
	tr = tr.Clone()
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: Control}
	tr.DialContext = dialer.DialContext
	tr.DialTLSContext = nil
	tr.DialTLS = nil //lint:ignore SA1019 a caller's transport may still set it
	tr.Proxy = nil
	return tr
}

// maxResponseHeaderBytes bounds the headers of an answer from a server an
// organization chose, which net/http would otherwise buffer up to 10 MB
// of, per request and in every worker at once.
const maxResponseHeaderBytes = 1 << 20

// NewTransport returns a transport with http.DefaultTransport's settings,
// not guarded, on a transport of its own, so idle connections to the
// servers an organization chose are not shared with, or closed by,
// unrelated code. An answer's headers are bounded at 1 MiB.
func NewTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
	}
}

// ErrRedirectRefused is wrapped by CheckRedirect's refusal of a redirect
// that changes the method or comes after MaxRedirects: the same request
// would be refused again, so it is no reason to retry. A redirect to a
// refused address wraps ErrNotAllowed instead.
var ErrRedirectRefused = errors.New("redirect refused")

// CheckRedirect returns an http.Client CheckRedirect function that
// re-applies CheckURL to every redirect target, refuses a redirect that
// changes the method and bounds the chain at MaxRedirects. The dial guard
// still checks resolved addresses.
func CheckRedirect(allowPrivate bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= MaxRedirects {
			return fmt.Errorf("%w: stopped after %d redirects", ErrRedirectRefused, MaxRedirects)
		}
		// A 301, 302 or 303 turns a POST into a GET without its body, which
		// an MCP endpoint would take for a request to open a stream, and
		// which would deliver nothing to a webhook endpoint.
		if req.Method != via[0].Method {
			return fmt.Errorf("%w: it changes %s to %s", ErrRedirectRefused, via[0].Method, req.Method)
		}
		if err := CheckURL(req.URL.String(), allowPrivate); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
		return nil
	}
}

// Client returns an HTTP client for outbound calls to addresses an
// organization chose (webhooks, Slack approvals): unless allowPrivate,
// internal addresses are refused when dialing, after DNS resolution, and
// every redirect is checked with CheckURL. timeout bounds each request. A
// refusal is an error that wraps ErrNotAllowed. A request made inside a
// trace carries its traceparent (tracing.Transport).
func Client(allowPrivate bool, timeout time.Duration) *http.Client {
	tr := NewTransport()
	if !allowPrivate {
		tr = Guard(tr)
	}
	return &http.Client{Transport: tracing.Transport(tr), Timeout: timeout, CheckRedirect: CheckRedirect(allowPrivate)}
}

// RequestError is the text of a request that could not be made or got no
// answer, without the URL Go quotes whole in it (a *url.Error's, the
// request's or a redirect target's): many receivers take their secret in
// their URL (a Slack incoming webhook's or response URL's path, a
// ?token=), and the text is recorded and logged. What failed (the method,
// the dial with its address, a refusal, a timeout) stays.
func RequestError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}
