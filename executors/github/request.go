package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

const (
	// apiVersion is the REST API version the requests and answers follow.
	apiVersion = "2022-11-28"

	// userAgent names outboxd to GitHub, which refuses requests without a
	// User-Agent.
	userAgent = "outboxd"

	// maxResponseBytes bounds how much of GitHub's answer is read. A page of
	// 100 pull requests, each with its repositories, is the largest answer.
	maxResponseBytes = 4 << 20

	// secondaryRetryAfter is how long to wait after a secondary rate limit
	// that names no time: GitHub asks for at least a minute.
	secondaryRetryAfter = time.Minute

	// maxRetryAfter caps a wait GitHub asks for, so a bogus header cannot
	// park an invocation for days. GitHub's primary limit resets hourly.
	maxRetryAfter = time.Hour
)

// statuses words GitHub's refusals other than its rate limits.
var statuses = httpsource.Statuses{
	Provider: "GitHub",
	Hints: map[int]httpsource.Hint{
		http.StatusUnauthorized:        {Code: executors.CodeUnauthorized, Message: "GitHub rejected the token (HTTP 401); reconnect GitHub"},
		http.StatusForbidden:           {Code: "forbidden", Message: "the GitHub token may not act on {subject} (HTTP 403); check the token's scopes or permissions"},
		http.StatusNotFound:            {Code: "not_found", Message: "GitHub found no {subject}, or the token cannot see it (HTTP 404); check the owner, repository and number"},
		http.StatusGone:                {Code: "gone", Message: "GitHub no longer offers {subject} (HTTP 410); issues may be disabled on the repository"},
		http.StatusUnprocessableEntity: {Code: "validation_failed", Message: "GitHub refused the request about {subject} as invalid (HTTP 422); check the params"},
	},
	RateLimitWait: secondaryRetryAfter,
	MaxWait:       maxRetryAfter,
}

// statusError classifies a non-2xx answer, quoting what GitHub said
// without the token. A 403 or 429 that is one of GitHub's rate limits is
// told apart from a refusal first.
func (s *client) statusError(resp *http.Response, raw []byte, subject, token string) *executors.Error {
	detail := httpsource.Detail(errorDetail(raw), token)
	status := resp.StatusCode
	if status == http.StatusForbidden || status == http.StatusTooManyRequests {
		if e := s.rateLimited(resp.Header, status, detail); e != nil {
			e.Message = httpsource.Said("GitHub", e.Message, detail)
			return e
		}
	}
	return statuses.Error(status, resp.Header, subject, detail)
}

// rateLimited classifies a 403 or 429 that is one of GitHub's rate limits,
// and returns nil for a 403 that is a plain refusal. In GitHub's order: a
// Retry-After header says how long to wait; otherwise an exhausted primary
// limit (x-ratelimit-remaining 0) waits until x-ratelimit-reset; otherwise a
// secondary limit waits a minute.
func (s *client) rateLimited(h http.Header, status int, detail string) *executors.Error {
	secondary := status == http.StatusTooManyRequests ||
		strings.Contains(strings.ToLower(detail), "secondary rate limit")
	if wait := httpsource.RetryAfter(h, 0, maxRetryAfter); wait > 0 {
		return &executors.Error{
			Code:       "secondary_rate_limited",
			Message:    fmt.Sprintf("GitHub's secondary rate limit refused the call (HTTP %d); it asked to wait %s", status, wait),
			Retryable:  true,
			RetryAfter: wait,
		}
	}
	if strings.TrimSpace(h.Get("X-RateLimit-Remaining")) == "0" {
		wait := s.untilReset(h)
		return &executors.Error{
			Code:       "rate_limited",
			Message:    fmt.Sprintf("the GitHub token's rate limit is used up (HTTP %d); it resets in %s", status, wait),
			Retryable:  true,
			RetryAfter: wait,
		}
	}
	if secondary {
		return &executors.Error{
			Code:       "secondary_rate_limited",
			Message:    fmt.Sprintf("GitHub's secondary rate limit refused the call (HTTP %d)", status),
			Retryable:  true,
			RetryAfter: secondaryRetryAfter,
		}
	}
	return nil
}

// untilReset is how long until x-ratelimit-reset (UTC epoch seconds), at
// least a second and at most maxRetryAfter; a missing or unreadable reset
// waits a minute.
func (s *client) untilReset(h http.Header) time.Duration {
	reset, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64)
	if err != nil || reset <= 0 {
		return secondaryRetryAfter
	}
	// Whole seconds, one more than are left, so the call comes back after
	// the reset whatever the fraction and a little clock difference.
	wait := time.Unix(reset, 0).Sub(s.now()).Truncate(time.Second) + time.Second
	return min(max(wait, time.Second), maxRetryAfter)
}

// errorBody is GitHub's error answer: a message, and for 422 the fields
// that failed.
type errorBody struct {
	Message string `json:"message"`
	Errors  []struct {
		Resource string `json:"resource"`
		Field    string `json:"field"`
		Code     string `json:"code"`
		Message  string `json:"message"`
	} `json:"errors"`
}

// errorDetail extracts the explanation from a GitHub error body:
// "Validation Failed: title missing_field; ...". Anything that is not
// GitHub's error shape yields "".
func errorDetail(raw []byte) string {
	var body errorBody
	if json.Unmarshal(raw, &body) != nil {
		return ""
	}
	var parts []string
	for _, e := range body.Errors {
		part := strings.TrimSpace(strings.Join([]string{e.Field, e.Code}, " "))
		if e.Message != "" {
			part = strings.TrimSpace(part + " " + e.Message)
		}
		if part != "" {
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return body.Message
	}
	return body.Message + ": " + strings.Join(parts, "; ")
}

// nextPage returns the page number of the Link header's rel="next" target,
// or nil when there is none: GitHub sends
//
//	<https://api.github.com/repositories/1/pulls?page=2>; rel="next", <...?page=5>; rel="last"
//
// and leaves rel="next" out on the last page.
func nextPage(h http.Header) *int {
	for _, value := range h.Values("Link") {
		for link := range strings.SplitSeq(value, ",") {
			target, params, ok := strings.Cut(link, ";")
			if !ok || !hasNextRel(params) {
				continue
			}
			target = strings.TrimSpace(target)
			target = strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
			u, err := url.Parse(target)
			if err != nil {
				return nil
			}
			page, err := strconv.Atoi(u.Query().Get("page"))
			if err != nil || page < 1 {
				return nil
			}
			return &page
		}
	}
	return nil
}

// hasNextRel reports whether a link's parameters have rel="next" (or a rel
// list including next).
func hasNextRel(params string) bool {
	for param := range strings.SplitSeq(params, ";") {
		name, value, ok := strings.Cut(param, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "rel") {
			continue
		}
		for rel := range strings.FieldsSeq(strings.Trim(strings.TrimSpace(value), `"`)) {
			if strings.EqualFold(rel, "next") {
				return true
			}
		}
	}
	return false
}
