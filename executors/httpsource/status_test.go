package httpsource_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

func TestDetail(t *testing.T) {
	t.Parallel()

	require.Equal(t, "bad token [REDACTED] here", httpsource.Detail("bad\ttoken  tok-1\n\x00here", "tok-1"))
	require.Equal(t, "as is", httpsource.Detail("as is", ""))

	// The token is redacted before the cut, so a token straddling the
	// limit leaves no fragment behind.
	long := strings.Repeat("a", httpsource.MaxDetailRunes-3) + "secret-token"
	got := httpsource.Detail(long, "secret-token")
	require.NotContains(t, got, "secret")
	require.Equal(t, httpsource.MaxDetailRunes+1, utf8.RuneCountInString(got))
	require.True(t, strings.HasSuffix(got, "…"))
}

func TestSaid(t *testing.T) {
	t.Parallel()

	require.Equal(t, "refused (Acme said: no)", httpsource.Said("Acme", "refused", "no"))
	require.Equal(t, "refused", httpsource.Said("Acme", "refused", ""))
}

func TestStatuses(t *testing.T) {
	t.Parallel()

	statuses := httpsource.Statuses{
		Provider: "Acme",
		Hints: map[int]httpsource.Hint{
			http.StatusUnauthorized: {Code: executors.CodeUnauthorized, Message: "Acme rejected the token (HTTP 401)"},
			http.StatusNotFound:     {Code: "not_found", Message: "Acme found no {subject} (HTTP 404)"},
		},
		RateLimitWait: 30 * time.Second,
		MaxWait:       time.Hour,
	}
	retryAfter := func(v string) http.Header { return http.Header{"Retry-After": {v}} }

	for _, tt := range []struct {
		name   string
		status int
		header http.Header
		detail string
		want   executors.Error
	}{
		{
			name: "HintWithSubjectAndDetail", status: 404, detail: "no such thing",
			want: executors.Error{Code: "not_found", Message: `Acme found no issue "7" (HTTP 404) (Acme said: no such thing)`},
		},
		{
			name: "Unauthorized", status: 401,
			want: executors.Error{Code: executors.CodeUnauthorized, Message: "Acme rejected the token (HTTP 401)"},
		},
		{
			name: "RateLimitedWithRetryAfter", status: 429, header: retryAfter("12"),
			want: executors.Error{Code: "ratelimited", Message: "Acme rate-limited the call (HTTP 429)", Retryable: true, RetryAfter: 12 * time.Second},
		},
		{
			name: "RateLimitedWithoutRetryAfter", status: 429,
			want: executors.Error{Code: "ratelimited", Message: "Acme rate-limited the call (HTTP 429)", Retryable: true, RetryAfter: 30 * time.Second},
		},
		{
			name: "RateLimitedRetryAfterCapped", status: 429, header: retryAfter("999999"),
			want: executors.Error{Code: "ratelimited", Message: "Acme rate-limited the call (HTTP 429)", Retryable: true, RetryAfter: time.Hour},
		},
		{
			name: "ServerErrorRetryable", status: 503, header: retryAfter("5"), detail: "down",
			want: executors.Error{
				Code: "http_503", Message: `Acme failed while handling the call about issue "7" (HTTP 503) (Acme said: down)`,
				Retryable: true, RetryAfter: 5 * time.Second,
			},
		},
		{
			name: "ServerErrorWithoutRetryAfter", status: 500,
			want: executors.Error{Code: "http_500", Message: `Acme failed while handling the call about issue "7" (HTTP 500)`, Retryable: true},
		},
		{
			name: "OtherClientErrorFinal", status: 409, header: retryAfter("5"),
			want: executors.Error{Code: "http_409", Message: `Acme rejected the call about issue "7" (HTTP 409)`},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := statuses.Error(tt.status, tt.header, `issue "7"`, tt.detail)
			require.Equal(t, tt.want, *got)
		})
	}
}
