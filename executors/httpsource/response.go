package httpsource

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrTooLarge is returned by ReadBody when the body is longer than its
// limit.
var ErrTooLarge = errors.New("httpsource: body is larger than the limit")

// ReadBody reads r up to one byte past limit, so a body longer than limit
// is told apart from one of exactly limit bytes: it then returns
// ErrTooLarge. What was read is returned with any error, so a caller can
// still classify an error answer by its start.
func ReadBody(r io.Reader, limit int64) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(raw)) > limit {
		err = ErrTooLarge
	}
	return raw, err
}

// CloseBody drains up to limit more bytes of body, which lets the transport
// reuse the connection, and closes it. It is meant to be deferred right
// after a successful Do.
func CloseBody(body io.ReadCloser, limit int64) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, limit))
	_ = body.Close()
}

// RetryAfter reads h's Retry-After as a delay in seconds, capped at ceiling
// so a bogus value cannot park an invocation for days. It returns fallback
// when the header is absent or unusable: zero, negative and HTTP-date values
// are not usable. A fallback of zero lets the caller tell "no usable
// header" apart, since a usable one is at least a second.
func RetryAfter(h http.Header, fallback, ceiling time.Duration) time.Duration {
	secs, err := strconv.ParseInt(strings.TrimSpace(h.Get("Retry-After")), 10, 64)
	if err != nil || secs <= 0 {
		return fallback
	}
	if secs > int64(ceiling/time.Second) {
		return ceiling
	}
	return time.Duration(secs) * time.Second
}
