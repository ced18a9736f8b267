package plugin

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/netguard"
)

// The sandbox relays a plugin's connections through egressDialer, which
// checks the address it dials after resolving the declared name: a name
// that resolves inside is refused at the connection (and logged) unless
// private networks are allowed.
func TestEgressDialer_ChecksTheAddressItDials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))

	_, err = egressDialer(nil, false, logger)(context.Background(), "tcp", net.JoinHostPort("localhost", port))
	require.ErrorIs(t, err, netguard.ErrNotAllowed)
	require.Contains(t, logs.String(), "destination=localhost:"+port)

	c, err := egressDialer(nil, true, logger)(context.Background(), "tcp", net.JoinHostPort("localhost", port))
	require.NoError(t, err, "private networks allowed")
	c.Close()
}
