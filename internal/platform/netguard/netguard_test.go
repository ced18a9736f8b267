package netguard

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestControl_RefusalNamesTheSetting: a refused address says which
// setting allows it, so a developer pointing a connector, webhook or
// database at localhost knows what to turn on.
func TestControl_RefusalNamesTheSetting(t *testing.T) {
	t.Parallel()
	err := Control("tcp", "127.0.0.1:8080", nil)
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrNotAllowed))
	require.EqualError(t, err, "address 127.0.0.1 is in a private, loopback, link-local or otherwise internal range; "+
		"set connectors.allow_private_networks to allow it")
	require.NoError(t, Control("tcp", "93.184.215.14:443", nil), "a public address passes")
}
