package mcp

import (
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestLimitedBody(t *testing.T) {
	t.Parallel()

	read := func(body string, budget int64) (string, error, bool, bool) {
		var tooLarge, closed bool
		b := &limitedBody{
			rc:         io.NopCloser(strings.NewReader(body)),
			remaining:  budget,
			onClose:    func() { closed = true },
			onTooLarge: func() { tooLarge = true },
		}
		got, err := io.ReadAll(b)
		require.NoError(t, b.Close())
		return string(got), err, tooLarge, closed
	}

	got, err, tooLarge, closed := read("0123456789", 10)
	require.NoError(t, err)
	require.Equal(t, "0123456789", got)
	require.False(t, tooLarge)
	require.True(t, closed)

	got, err, tooLarge, _ = read("0123456789", 100)
	require.NoError(t, err)
	require.Equal(t, "0123456789", got)
	require.False(t, tooLarge)

	_, err, tooLarge, closed = read("0123456789a", 10)
	require.ErrorIs(t, err, errResponseTooLarge)
	require.True(t, tooLarge)
	require.True(t, closed)
}

func TestScrubber(t *testing.T) {
	t.Parallel()

	s := scrubber("hunter2")
	require.Equal(t, "token [REDACTED] and [REDACTED]", s.scrub("token hunter2 and hunter2"))
	require.Equal(t, "nothing to hide", scrubber("").scrub("nothing to hide"))

	long := strings.Repeat("é", maxMessageLen)
	got := s.scrub(long)
	require.True(t, utf8.ValidString(got))
	require.LessOrEqual(t, len(got), maxMessageLen+len("…"))
	require.True(t, strings.HasSuffix(got, "…"))

	// A secret straddling the cut is removed before truncating.
	text := strings.Repeat("a", maxMessageLen-3) + "hunter2"
	require.NotContains(t, s.scrub(text), "hun")
}
