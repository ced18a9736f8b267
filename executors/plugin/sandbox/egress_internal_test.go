//go:build linux

package sandbox

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each name gets a loopback address of its own, never one a destination
// names as an address (a listener there would collide); the hosts file
// names them, also fully qualified.
func TestLocalAddrs(t *testing.T) {
	addrs, hosts := localAddrs([]Destination{
		{Host: "127.1.0.1", Port: 443}, {Host: "api.example.com", Port: 443}, {Host: "API.example.com.", Port: 80},
		{Host: "localhost", Port: 8080}, {Host: "other.example.com", Port: 443}, {Host: "::ffff:10.0.0.1", Port: 5432},
	})
	want := []string{"127.1.0.1", "127.1.0.2", "127.1.0.2", "127.0.0.1", "127.1.0.3", "10.0.0.1"}
	got := make([]string, len(addrs))
	for i, a := range addrs {
		got[i] = a.String()
	}
	require.Equal(t, want, got)
	require.Equal(t, "127.0.0.1\tlocalhost\n127.1.0.2\tapi.example.com api.example.com.\n127.1.0.3\tother.example.com other.example.com.\n", string(hosts))
	require.True(t, netip.MustParseAddr(got[1]).IsLoopback())
}
