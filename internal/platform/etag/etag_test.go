package etag_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/etag"
)

func TestMatches(t *testing.T) {
	t.Parallel()
	tag := etag.Of(map[string]string{"b": "2", "a": "1"})
	require.Equal(t, tag, etag.Of(map[string]string{"a": "1", "b": "2"}), "equal values, equal tags")
	require.NotEqual(t, tag, etag.Of(map[string]string{"a": "1"}))
	for ifMatch, want := range map[string]bool{
		"": true, "*": true, tag: true, " " + tag + " ": true, `"x", ` + tag: true, "W/" + tag: true,
		`"x"`: false, tag[1 : len(tag)-1]: false, `"x", "y"`: false,
	} {
		require.Equal(t, want, etag.Matches(ifMatch, tag), "If-Match %s", ifMatch)
	}
}
