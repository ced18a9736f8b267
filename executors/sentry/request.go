package sentry

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

const (
	// maxResponseBytes bounds how much of Sentry's answer is read. A full
	// event with its stack trace and breadcrumbs is the largest answer and
	// rarely comes near it.
	maxResponseBytes = 1 << 20

	// defaultRetryAfter is used when Sentry rate-limits without a usable
	// Retry-After header.
	defaultRetryAfter = 30 * time.Second

	// maxRetryAfter caps a Retry-After header, so a bogus value cannot park
	// an invocation for days.
	maxRetryAfter = time.Hour
)

// statuses words Sentry's refusals.
var statuses = httpsource.Statuses{
	Provider: "Sentry",
	Hints: map[int]httpsource.Hint{
		http.StatusUnauthorized: {Code: executors.CodeUnauthorized, Message: "Sentry rejected the token (HTTP 401); reconnect Sentry"},
		http.StatusForbidden:    {Code: "forbidden", Message: "the Sentry token lacks access to {subject} (HTTP 403); check the token's scopes and team membership"},
		http.StatusNotFound:     {Code: "not_found", Message: "Sentry found no {subject}, or the token cannot see it (HTTP 404); check the ids and slugs"},
	},
	RateLimitWait: defaultRetryAfter,
	MaxWait:       maxRetryAfter,
}

// statusError classifies a non-2xx answer, quoting what Sentry said
// without the token. Sentry's API answers a rate-limited call (429)
// without Retry-After: it then waits until X-Sentry-Rate-Limit-Reset.
func (s *client) statusError(resp *http.Response, raw []byte, subject, token string) *executors.Error {
	e := statuses.Error(resp.StatusCode, resp.Header, subject, httpsource.Detail(errorDetail(raw), token))
	if resp.StatusCode == http.StatusTooManyRequests && httpsource.RetryAfter(resp.Header, 0, maxRetryAfter) == 0 {
		if wait, ok := s.untilReset(resp.Header); ok {
			e.RetryAfter = wait
		}
	}
	return e
}

// untilReset is how long until X-Sentry-Rate-Limit-Reset, when the call's
// rate-limit window starts again (UTC epoch seconds, perhaps with a
// fraction): whole seconds, one more than are left, so the call comes back
// after the reset whatever a little clock difference; at least a second
// and at most maxRetryAfter. ok is false when the header is missing or
// unreadable.
func (s *client) untilReset(h http.Header) (wait time.Duration, ok bool) {
	reset, err := strconv.ParseFloat(strings.TrimSpace(h.Get("X-Sentry-Rate-Limit-Reset")), 64)
	if err != nil || !(reset > 0) {
		return 0, false
	}
	left := reset - float64(s.now().UnixNano())/float64(time.Second)
	if left >= maxRetryAfter.Seconds() {
		return maxRetryAfter, true
	}
	return max(time.Duration(math.Floor(left)+1)*time.Second, time.Second), true
}

// errorDetail extracts the explanation from a Sentry error body.
// Sentry answers {"detail": "..."}, sometimes {"detail": {"message": ...}},
// for invalid fields {"field": ["message", ...]}, and for a rate-limited
// call a JSON string. Anything else yields "".
func errorDetail(raw []byte) string {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return ""
	}
	if d, ok := body["detail"]; ok {
		var s string
		if json.Unmarshal(d, &s) == nil {
			return s
		}
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(d, &obj) == nil {
			return obj.Message
		}
		return ""
	}

	var parts []string
	for _, field := range slices.Sorted(maps.Keys(body)) {
		var msgs []string
		if json.Unmarshal(body[field], &msgs) != nil || len(msgs) == 0 {
			continue
		}
		parts = append(parts, field+": "+strings.Join(msgs, " "))
	}
	return strings.Join(parts, "; ")
}

// isJSONArray reports whether raw, already known to be valid JSON, is an
// array.
func isJSONArray(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '['
}
