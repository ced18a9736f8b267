package invocation_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/invocation"
)

func TestParsePosition(t *testing.T) {
	t.Parallel()
	for _, c := range []invocation.Cursor{{XID: 1, ID: 0}, {XID: 748, ID: 12}, {XID: 1 << 40, ID: 1<<63 - 1}} {
		got, ok := invocation.ParsePosition(c.Position())
		require.True(t, ok, c.Position())
		require.Equal(t, c, got)
	}
	// Plain event ids, signs, other characters, an xid of 0, an id beyond
	// int64 and an xid beyond int64 are not positions.
	for _, s := range []string{"", "0", "12", "9223372036854775807", "+7480000000000000000012", "-7480000000000000000012",
		"74800000000000000000x2", "00000000000000000000012", "19999999999999999999", "99999999999999999999999999999999999999999"} {
		_, ok := invocation.ParsePosition(s)
		require.False(t, ok, s)
	}
}
