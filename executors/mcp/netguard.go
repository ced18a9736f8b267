package mcp

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/outboxd/outboxd/internal/platform/netguard"
)

// maxRedirects bounds the redirects followed for one request. MCP servers
// have no reason to redirect more than once or twice; each hop is checked
// again by CheckURL and by the dial guard.
const maxRedirects = 5

// errURLNotAllowed is the cause of every refusal of a connector address, so
// classification finds it however deep the HTTP stack wrapped it.
var errURLNotAllowed = netguard.ErrNotAllowed

// addrNotAllowedError is returned by the dial guard for a resolved address
// in a refused range.
type addrNotAllowedError = netguard.AddrError

// addrAllowed reports whether a connector may be reached at addr when
// private networks are not allowed (netguard.AddrAllowed).
func addrAllowed(addr netip.Addr) bool { return netguard.AddrAllowed(addr) }

// CheckURL statically checks a connector URL, as the API does before saving
// one: it must be absolute http or https with a host and no user info, and,
// unless allowPrivate, its host must not be a literal address in a refused
// range. Host names are not resolved here: the dial guard checks the
// addresses they resolve to on every connection, including after redirects,
// so a name cannot be pointed at an internal address later.
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
	if addr, err := netip.ParseAddr(u.Hostname()); err == nil && !addrAllowed(addr) {
		return fmt.Errorf("connector URL not allowed: %w", &addrNotAllowedError{Addr: addr})
	}
	return nil
}

// guardControl refuses connections to internal addresses
// (netguard.Control).
var guardControl = netguard.Control

// guardedTransport returns the transport connectors are reached through.
// With the guard on, it dials through a net.Dialer whose Control refuses
// internal addresses, and proxies are disabled: through a proxy, the guard
// would only see the proxy's address and the proxy would resolve the
// connector's name itself.
func guardedTransport(base *http.Client, allowPrivate bool) (http.RoundTripper, error) {
	var rt http.RoundTripper
	if base != nil {
		rt = base.Transport
	}
	if rt == nil {
		rt = defaultTransport()
	}
	if allowPrivate {
		return rt, nil
	}
	tr, ok := rt.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("mcp: HTTPClient.Transport is a %T; the private network guard needs an *http.Transport (or set AllowPrivateNetworks)", rt)
	}
	tr = tr.Clone()
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: guardControl}
	tr.DialContext = dialer.DialContext
	tr.DialTLSContext = nil
	tr.Proxy = nil
	return tr, nil
}

// defaultTransport mirrors http.DefaultTransport's settings on a transport
// of its own, so idle connections to connectors are not shared with, or
// closed by, unrelated code.
func defaultTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// checkRedirect re-applies CheckURL to every redirect target and bounds the
// chain. The dial guard still checks resolved addresses.
func checkRedirect(allowPrivate bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		// A 301, 302 or 303 turns a POST into a GET without its body, which
		// an MCP endpoint would take for a request to open a stream.
		if req.Method != via[0].Method {
			return fmt.Errorf("redirect refused: it changes %s to %s", via[0].Method, req.Method)
		}
		if err := CheckURL(req.URL.String(), allowPrivate); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
		return nil
	}
}

// sameOrigin reports whether u has the scheme and host of origin, so the
// connector secret is only ever sent to the server it was configured for
// and not to a host a redirect points at.
func sameOrigin(u, origin *url.URL) bool {
	return strings.EqualFold(u.Scheme, origin.Scheme) && strings.EqualFold(u.Host, origin.Host)
}

// GuardedClient returns an HTTP client with the guard connectors use, for
// other outbound calls to addresses an organization chose (webhooks):
// unless allowPrivate, internal addresses are refused when dialing, after
// DNS resolution, and every redirect is checked with CheckURL. timeout
// bounds each request.
func GuardedClient(allowPrivate bool, timeout time.Duration) (*http.Client, error) {
	rt, err := guardedTransport(nil, allowPrivate)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt, Timeout: timeout, CheckRedirect: checkRedirect(allowPrivate)}, nil
}

// NotAllowed reports whether err is the guard refusing an address.
func NotAllowed(err error) bool { return errors.Is(err, errURLNotAllowed) }
