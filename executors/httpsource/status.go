package httpsource

import (
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/outboxd/outboxd/executors"
)

// MaxDetailRunes bounds how much of a provider's own explanation Detail
// keeps for a message.
const MaxDetailRunes = 300

// Detail makes text, a provider's explanation of a refusal, safe to quote
// in a message: token is replaced with Redacted first, so no fragment of it
// can survive the cut, then control characters become spaces, runs of
// space collapse, and the text is cut to MaxDetailRunes.
func Detail(text, token string) string {
	if token != "" {
		text = strings.ReplaceAll(text, token, Redacted)
	}
	text = strings.Join(strings.FieldsFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError
	}), " ")
	if utf8.RuneCountInString(text) > MaxDetailRunes {
		text = string([]rune(text)[:MaxDetailRunes]) + "…"
	}
	return text
}

// Said returns msg followed by what provider said, " (<provider> said:
// <detail>)", or msg alone when detail is empty.
func Said(provider, msg, detail string) string {
	if detail == "" {
		return msg
	}
	return msg + " (" + provider + " said: " + detail + ")"
}

// Hint is how a provider words one refusal: the error code and the
// message, in which {subject} stands for what the call was about.
type Hint struct {
	Code    string
	Message string
}

// Statuses classifies a REST provider's non-2xx answers: the refusals the
// provider explains in its own words (Hints), and the rest alike for every
// provider.
type Statuses struct {
	// Provider is the provider's display name, e.g. "Sentry".
	Provider string
	// Hints word the statuses the provider explains, such as 401 (whose
	// code should be executors.CodeUnauthorized, so the worker refreshes
	// the token), 403 or 404. None is retryable.
	Hints map[int]Hint
	// RateLimitWait is how long to wait after a 429 without a usable
	// Retry-After.
	RateLimitWait time.Duration
	// MaxWait caps a Retry-After, so a bogus value cannot park an
	// invocation for days.
	MaxWait time.Duration
}

// Error classifies a non-2xx answer with status and header to a call about
// subject; detail (from Detail) is what the provider said, quoted after
// the message. A hinted status is worded as its hint says. Otherwise a 3xx
// (a redirect not followed) is http_<status>, not retryable; a 429 is
// ratelimited, retryable after Retry-After (RateLimitWait without one);
// a 5xx is http_<status>, retryable, after Retry-After when the answer
// has one; any other status is http_<status>, not retryable.
func (s *Statuses) Error(status int, header http.Header, subject, detail string) *executors.Error {
	if h, ok := s.Hints[status]; ok {
		return &executors.Error{Code: h.Code, Message: Said(s.Provider, strings.ReplaceAll(h.Message, "{subject}", subject), detail)}
	}
	switch {
	case status >= 300 && status <= 399:
		// A redirect a client did not follow (KeepingMethod): the call
		// did not reach what it was meant for.
		return &executors.Error{
			Code:    fmt.Sprintf("http_%d", status),
			Message: Said(s.Provider, fmt.Sprintf("%s answered the call about %s with a redirect (HTTP %d) that was not followed; check the provider's base_url", s.Provider, subject, status), detail),
		}
	case status == http.StatusTooManyRequests:
		return &executors.Error{
			Code:       "ratelimited",
			Message:    Said(s.Provider, s.Provider+" rate-limited the call (HTTP 429)", detail),
			Retryable:  true,
			RetryAfter: RetryAfter(header, s.RateLimitWait, s.MaxWait),
		}
	case status >= 500:
		return &executors.Error{
			Code:       fmt.Sprintf("http_%d", status),
			Message:    Said(s.Provider, fmt.Sprintf("%s failed while handling the call about %s (HTTP %d)", s.Provider, subject, status), detail),
			Retryable:  true,
			RetryAfter: RetryAfter(header, 0, s.MaxWait),
		}
	default:
		return &executors.Error{
			Code:    fmt.Sprintf("http_%d", status),
			Message: Said(s.Provider, fmt.Sprintf("%s rejected the call about %s (HTTP %d)", s.Provider, subject, status), detail),
		}
	}
}
