package httpserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func request(remote string, forwardedFor ...string) *http.Request {
	r := httptest.NewRequest("GET", "/readyz", nil)
	r.RemoteAddr = remote
	for _, f := range forwardedFor {
		r.Header.Add("X-Forwarded-For", f)
	}
	return r
}

func TestAddrLimiter(t *testing.T) {
	t.Parallel()
	// A rate so slow that no token comes back during the test.
	cfg := &Config{UnauthenticatedRate: 0.001, UnauthenticatedBurst: 3}

	t.Run("BurstThenRefused", func(t *testing.T) {
		t.Parallel()
		l := NewAddrLimiter(cfg)
		for i := range 3 {
			allowed, _ := l.Allow(request("192.0.2.1:1000"))
			require.True(t, allowed, "request %d", i)
		}
		allowed, wait := l.Allow(request("192.0.2.1:2000"))
		require.False(t, allowed, "the same address from another port")
		require.Greater(t, wait, 100*time.Second, "a token comes back in 1/rate")
		allowed, _ = l.Allow(request("192.0.2.2:1000"))
		require.True(t, allowed, "another address has its own bucket")
	})

	t.Run("ForwardedForIgnoredUnlessTrusted", func(t *testing.T) {
		t.Parallel()
		l := NewAddrLimiter(cfg)
		for i := range 3 {
			allowed, _ := l.Allow(request("192.0.2.1:1000", fmt.Sprintf("198.51.100.%d", i)))
			require.True(t, allowed)
		}
		allowed, _ := l.Allow(request("192.0.2.1:1000", "198.51.100.99"))
		require.False(t, allowed, "a client cannot pick its address")

		trusting := NewAddrLimiter(&Config{UnauthenticatedRate: 0.001, UnauthenticatedBurst: 1, TrustForwardedFor: true})
		allowed, _ = trusting.Allow(request("192.0.2.1:1000", "203.0.113.7, 198.51.100.1"))
		require.True(t, allowed)
		allowed, _ = trusting.Allow(request("192.0.2.1:1000", "203.0.113.8, 198.51.100.1"))
		require.False(t, allowed, "the last entry, the one the proxy added, counts")
		allowed, _ = trusting.Allow(request("192.0.2.1:1000", "198.51.100.1", "198.51.100.2"))
		require.True(t, allowed, "the last header's last entry")
		allowed, _ = trusting.Allow(request("192.0.2.9:1000", "not an address"))
		require.True(t, allowed, "an unreadable header falls back to the peer")
		allowed, _ = trusting.Allow(request("192.0.2.9:1000"))
		require.False(t, allowed)
	})

	t.Run("IPv6CountsPer64", func(t *testing.T) {
		t.Parallel()
		l := NewAddrLimiter(&Config{UnauthenticatedRate: 0.001, UnauthenticatedBurst: 1})
		allowed, _ := l.Allow(request("[2001:db8:1:2::1]:1000"))
		require.True(t, allowed)
		allowed, _ = l.Allow(request("[2001:db8:1:2:ffff::9]:1000"))
		require.False(t, allowed, "the same /64")
		allowed, _ = l.Allow(request("[2001:db8:1:3::1]:1000"))
		require.True(t, allowed, "another /64")
	})

	t.Run("RemembersBoundedAddresses", func(t *testing.T) {
		t.Parallel()
		l := NewAddrLimiter(&Config{UnauthenticatedRate: 0.001, UnauthenticatedBurst: 1})
		allowed, _ := l.Allow(request("10.255.255.255:1"))
		require.True(t, allowed)
		for i := range maxTrackedAddrs {
			allowed, _ := l.Allow(request(fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255)))
			require.True(t, allowed)
		}
		require.Equal(t, maxTrackedAddrs, l.tracked())
		allowed, _ = l.Allow(request("10.255.255.255:1"))
		require.True(t, allowed, "the least recently seen address was forgotten")
	})

	t.Run("Off", func(t *testing.T) {
		t.Parallel()
		require.Nil(t, NewAddrLimiter(&Config{}))
		var l *AddrLimiter
		allowed, _ := l.Allow(request("192.0.2.1:1"))
		require.True(t, allowed)
	})
}

// TestClientAddr: the address the audit trail records is the peer's, or
// with forwardedFor the last X-Forwarded-For entry that parses; whole (an
// IPv6 address is not cut to its /64) and without an IPv4 mapping or a
// zone.
func TestClientAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r            *http.Request
		forwardedFor bool
		want         string
	}{
		{request("192.0.2.1:1234", "203.0.113.7"), false, "192.0.2.1"},
		{request("192.0.2.1:1234", "198.51.100.1, 203.0.113.7"), true, "203.0.113.7"},
		{request("192.0.2.1:1234", "not an address"), true, "192.0.2.1"},
		{request("[2001:db8::1:2]:443"), false, "2001:db8::1:2"},
		{request("[::ffff:192.0.2.5]:443"), false, "192.0.2.5"},
		{request("nonsense"), false, ""},
		// A zone is no part of a client's address, and could be any
		// text to write into the audit trail (invalid UTF-8 failing its
		// insert).
		{request("192.0.2.1:1234", "fe80::1%\xff<script>"), true, "fe80::1"},
		{request("192.0.2.1:1234", "2001:db8::7%eth0"), true, "2001:db8::7"},
	} {
		require.Equal(t, tc.want, ClientAddr(tc.r, tc.forwardedFor), "%s %v", tc.r.RemoteAddr, tc.r.Header)
	}
}
