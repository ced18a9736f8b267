package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/platform/netguard"
)

// Error codes this package reports in executors.Error, besides
// executors.CodeUnauthorized and the "http_<status>" codes.
const (
	// CodeURLNotAllowed: the connector URL is malformed, not http(s), or
	// reaches a private network while those are not allowed. Not retried.
	CodeURLNotAllowed = "url_not_allowed"
	// CodeInvalidConnector: the connector's auth configuration or secret
	// cannot be used. Not retried.
	CodeInvalidConnector = "invalid_connector"
	// CodeToolError: the tool ran and reported failure (isError). Not
	// retried: the server has answered.
	CodeToolError = "tool_error"
	// CodeUnknownAction: the connector offers no tool by that name.
	CodeUnknownAction = "unknown_action"
	// CodeInvalidParams: the params are not a JSON object.
	CodeInvalidParams = "invalid_params"
	// CodeTimeout: the server did not answer within the deadline. Retried.
	CodeTimeout = "timeout"
	// CodeCanceled: the caller gave up before the server answered. Retried.
	CodeCanceled = "canceled"
	// CodeUnreachable: no connection could be made. Retried.
	CodeUnreachable = "unreachable"
	// CodeNetworkError: the connection failed mid-request. Retried.
	CodeNetworkError = "network_error"
	// CodeRateLimited: the server answered 429. Retried after its
	// Retry-After, or 30s without one.
	CodeRateLimited = "rate_limited"
	// CodeRPCError: the server refused the request with a JSON-RPC error,
	// such as invalid arguments. Retried only for internal errors.
	CodeRPCError = "rpc_error"
	// CodeResponseTooLarge: an answer exceeded the size limit, a tool list
	// the limits on its tools (maxTools, maxToolBytes), or the server's
	// answers asked the client for more requests than an operation makes
	// (maxAttemptRequests). Not retried: a tool call may have run, and its
	// answer would be as large again.
	CodeResponseTooLarge = "response_too_large"
	// CodeProtocolError: the server broke the MCP protocol in some other
	// way. Retried, as any unclassified failure.
	CodeProtocolError = "protocol_error"
)

// maxMessageLen bounds the text taken from a server or an SDK error into a
// message, since messages are stored with the invocation.
const maxMessageLen = 1000

// newError builds a classified error. Causes carrying text from the server
// or the SDK are not kept, as their text is not scrubbed.
func newError(code, msg string, retryable bool, cause error) error {
	return &executors.Error{Code: code, Message: msg, Retryable: retryable, Cause: cause}
}

// scrubber removes a connector's secrets from text bound for errors. A
// secret can reach error text through the server (an echoing error page, a
// JSON-RPC message) or the HTTP stack, which names the URL it failed on,
// and an error is stored with the invocation and logged. The secrets are
// the connector's credential and its URL's query and key-like path
// segments (some servers take a key there), which only admins may read;
// the agent sees the invocation's error and result, and with the key
// could call the server itself.
type scrubber []string

const redacted = "[REDACTED]"

// newScrubber scrubs secret and, of conn's URL, the whole query, each of
// its values as written and decoded (those of at least minSecretLen bytes,
// as shorter ones are no secret and would blot out ordinary text), and
// each path segment that looks like a key (KeyLike), as written and
// decoded.
func newScrubber(conn *Connector, secret string) scrubber {
	var s scrubber
	if secret != "" {
		s = append(s, secret)
	}
	u, err := url.Parse(conn.URL)
	if err != nil {
		return s
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		decoded, _ := url.PathUnescape(seg)
		for _, v := range []string{seg, decoded} {
			if KeyLike(v) {
				s = append(s, v)
			}
		}
	}
	if u.RawQuery == "" {
		return s
	}
	s = append(s, u.RawQuery)
	for pair := range strings.SplitSeq(u.RawQuery, "&") {
		_, value, _ := strings.Cut(pair, "=")
		decoded, _ := url.QueryUnescape(value)
		for _, v := range []string{value, decoded} {
			if len(v) >= minSecretLen {
				s = append(s, v)
			}
		}
	}
	return s
}

const (
	minSecretLen = 4
	// minPathKeyLen is the length from which a path segment with both
	// letters and digits is taken for a key (…/mcp/s/<key>/mcp, a UUID):
	// shorter segments, or words, are the path's own ("mcp", "v1", "sse").
	minPathKeyLen = 16
)

// KeyLike reports whether a URL path segment looks like a key: at least
// minPathKeyLen bytes with letters and digits. The audit trail redacts
// such segments of a connector's URL too.
func KeyLike(seg string) bool {
	return len(seg) >= minPathKeyLen &&
		strings.ContainsFunc(seg, unicode.IsLetter) && strings.ContainsFunc(seg, unicode.IsDigit)
}

func (s scrubber) scrub(text string) string {
	for _, secret := range s {
		if secret != "" {
			text = strings.ReplaceAll(text, secret, redacted)
		}
	}
	return truncate(text)
}

// errorf builds a classified error whose message is scrubbed.
func (s scrubber) errorf(code string, retryable bool, cause error, format string, args ...any) error {
	return newError(code, s.scrub(fmt.Sprintf(format, args...)), retryable, cause)
}

func truncate(text string) string {
	if len(text) <= maxMessageLen {
		return text
	}
	cut := maxMessageLen
	for cut > 0 && !isRuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// classify turns the failure of an operation on a connector into a
// classified error. what names the operation for messages ("listing
// tools"); parent is the caller's context and ctx the operation's, which
// also carries the operation's own deadline of timeout.
func classify(parent, ctx context.Context, err error, out outcome, s scrubber, what string, timeout time.Duration) error {
	switch {
	case out.notAllowed != nil:
		return s.errorf(CodeURLNotAllowed, false, netguard.ErrNotAllowed, "%s: the connector URL leads to a refused address: %v", what, out.notAllowed)

	case errors.Is(err, netguard.ErrNotAllowed):
		// A redirect to a literal internal address, refused before dialing.
		return s.errorf(CodeURLNotAllowed, false, netguard.ErrNotAllowed, "%s: %v", what, err)

	case errors.Is(err, errToolListTooLarge):
		return s.errorf(CodeResponseTooLarge, false, nil, "%s: %v", what, err)

	case parent.Err() != nil:
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			return s.errorf(CodeTimeout, true, parent.Err(), "%s: the deadline passed before the MCP server answered", what)
		}
		return s.errorf(CodeCanceled, true, parent.Err(), "%s: canceled before the MCP server answered", what)

	case ctx.Err() != nil:
		return s.errorf(CodeTimeout, true, context.DeadlineExceeded, "%s: the MCP server did not answer within %s", what, timeout)

	case out.tooLarge:
		return s.errorf(CodeResponseTooLarge, false, nil, "%s: the MCP server's answer exceeds %d bytes", what, maxResponseBytes)

	case out.flooded:
		return s.errorf(CodeResponseTooLarge, false, nil, "%s: the MCP server's answers asked for more than %d requests", what, maxAttemptRequests)

	case out.status == http.StatusUnauthorized || out.status == http.StatusForbidden:
		return s.errorf(executors.CodeUnauthorized, false, nil, "%s: the MCP server rejected the credential (HTTP %d)", what, out.status)

	case out.status == http.StatusTooManyRequests:
		return &executors.Error{
			Code:       CodeRateLimited,
			Message:    s.scrub(fmt.Sprintf("%s: the MCP server rate-limited the request (HTTP 429)", what)),
			Retryable:  true,
			RetryAfter: cmp.Or(out.retryAfter, defaultRateLimitWait),
		}

	case out.status >= 500:
		return &executors.Error{
			Code:       fmt.Sprintf("http_%d", out.status),
			Message:    s.scrub(fmt.Sprintf("%s: the MCP server answered HTTP %d", what, out.status)),
			Retryable:  true,
			RetryAfter: out.retryAfter,
		}

	case out.transport != nil:
		return transportError(out.transport, s, what)
	}

	// Under the newest protocol a JSON-RPC error can come with a 4xx status,
	// so the error body is looked at before the status.
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		// An internal error may be passing; every other JSON-RPC error says
		// the request itself is wrong.
		retryable := rpcErr.Code == jsonrpc.CodeInternalError
		return s.errorf(CodeRPCError, retryable, nil, "%s: the MCP server refused the request (JSON-RPC error %d): %s", what, rpcErr.Code, rpcErr.Message)
	}
	if out.status >= 300 {
		return s.errorf(fmt.Sprintf("http_%d", out.status), false, nil, "%s: the MCP server answered HTTP %d: %v", what, out.status, err)
	}
	return s.errorf(CodeProtocolError, true, nil, "%s: %v", what, err)
}

// transportError classifies a request that got no response. Failing to
// connect at all is told apart from failing midway, as only the latter can
// have reached the server.
func transportError(err error, s scrubber, what string) error {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr), errors.As(err, &opErr) && opErr.Op == "dial":
		return s.errorf(CodeUnreachable, true, nil, "%s: the MCP server is unreachable: %v", what, err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return s.errorf(CodeTimeout, true, nil, "%s: the connection to the MCP server timed out: %v", what, err)
	}
	return s.errorf(CodeNetworkError, true, nil, "%s: the connection to the MCP server failed: %v", what, err)
}
