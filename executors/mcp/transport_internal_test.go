package mcp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/platform/netguard"
)

func TestLimitedBody(t *testing.T) {
	t.Parallel()

	read := func(body string, budget int64) (string, bool, bool, error) {
		var tooLarge, closed bool
		b := &limitedBody{
			rc:         io.NopCloser(strings.NewReader(body)),
			remaining:  budget,
			onClose:    func() { closed = true },
			onTooLarge: func() { tooLarge = true },
		}
		got, err := io.ReadAll(b)
		require.NoError(t, b.Close())
		return string(got), tooLarge, closed, err
	}

	got, tooLarge, closed, err := read("0123456789", 10)
	require.NoError(t, err)
	require.Equal(t, "0123456789", got)
	require.False(t, tooLarge)
	require.True(t, closed)

	got, tooLarge, _, err = read("0123456789", 100)
	require.NoError(t, err)
	require.Equal(t, "0123456789", got)
	require.False(t, tooLarge)

	_, tooLarge, closed, err = read("0123456789a", 10)
	require.ErrorIs(t, err, errResponseTooLarge)
	require.True(t, tooLarge)
	require.True(t, closed)
}

func TestScrubber(t *testing.T) {
	t.Parallel()

	s := scrubber{"hunter2"}
	require.Equal(t, "token [REDACTED] and [REDACTED]", s.scrub("token hunter2 and hunter2"))
	require.Equal(t, "nothing to hide", scrubber{}.scrub("nothing to hide"))

	long := strings.Repeat("é", maxMessageLen)
	got := s.scrub(long)
	require.True(t, utf8.ValidString(got))
	require.LessOrEqual(t, len(got), maxMessageLen+len("…"))
	require.True(t, strings.HasSuffix(got, "…"))

	// A secret straddling the cut is removed before truncating.
	text := strings.Repeat("a", maxMessageLen-3) + "hunter2"
	require.NotContains(t, s.scrub(text), "hun")
}

func TestClassify_RedirectRefused(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	redirectErr := &url.Error{Op: "Post", URL: "https://mcp.example.com/mcp", Err: netguard.CheckRedirect(false)(
		httptest.NewRequest(http.MethodPost, "http://169.254.169.254/", nil),
		[]*http.Request{httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp", nil)},
	)}
	err := classify(ctx, ctx, fmt.Errorf("sending %q: %w", "tools/call", redirectErr), outcome{status: http.StatusTemporaryRedirect}, nil, "calling tool", time.Second)

	var execErr *executors.Error
	require.ErrorAs(t, err, &execErr)
	require.Equal(t, CodeURLNotAllowed, execErr.Code)
	require.False(t, execErr.Retryable)
}
