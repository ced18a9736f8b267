package netguard_test

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/netguard"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()

	t.Run("Allowed", func(t *testing.T) {
		t.Parallel()

		for _, raw := range []string{
			"https://mcp.example.com/mcp",
			"http://mcp.example.com:8080/v1/mcp?team=a",
			"HTTPS://MCP.EXAMPLE.COM/",
			"http://93.184.216.34/mcp",
			"https://[2606:4700:4700::1111]/mcp",
			// Names are resolved and checked at dial time.
			"http://localhost:3000/mcp",
			"http://metadata.google.internal/",
		} {
			require.NoError(t, netguard.CheckURL(raw, false), raw)
			require.NoError(t, netguard.CheckURL(raw, true), raw)
		}
	})

	t.Run("PrivateAddresses", func(t *testing.T) {
		t.Parallel()

		for _, raw := range []string{
			"http://127.0.0.1:8080/mcp",
			"http://127.1.2.3/",
			"http://10.0.0.1/",
			"http://10.255.1.2/",
			"http://172.16.0.1/",
			"http://192.168.1.10/",
			"http://169.254.169.254/latest/meta-data/",
			"http://169.254.1.1/",
			"http://0.0.0.0:8080/",
			"http://100.100.100.200/",
			"http://224.0.0.1/",
			"http://255.255.255.255/",
			"http://[::1]:8080/mcp",
			"http://[::]/",
			"http://[fd00:ec2::254]/latest/meta-data/",
			"http://[fc00::1]/",
			"http://[fe80::1%25eth0]/",
			"http://[ff02::1]/",
			"http://[::ffff:127.0.0.1]/",
			"http://[::ffff:169.254.169.254]/",
			"http://[64:ff9b::a00:1]/",
			"http://[2002:a00:1::]/",
			// The local-use NAT64 prefix (RFC 8215): a translator of the
			// network's own reaches the IPv4 address it carries, where the
			// operator chose to put it.
			"http://[64:ff9b:1::a9fe:a9fe]/",
			"http://[64:ff9b:1:7f00:1::]/",
			// SIIT's IPv4-translated form (RFC 2765) of 127.0.0.1 and
			// 169.254.169.254: not IPv4-mapped, so not unmapped.
			"http://[::ffff:0:7f00:1]/",
			"http://[::ffff:0:a9fe:a9fe]/",
		} {
			err := netguard.CheckURL(raw, false)
			require.Error(t, err, raw)
			require.NoError(t, netguard.CheckURL(raw, true), raw)
		}
	})

	t.Run("EmbeddedPublicAddresses", func(t *testing.T) {
		t.Parallel()

		for _, raw := range []string{
			"http://[::ffff:93.184.216.34]/",
			"http://[64:ff9b::5db8:d822]/",
		} {
			require.NoError(t, netguard.CheckURL(raw, false), raw)
		}
	})

	t.Run("NeverAllowed", func(t *testing.T) {
		t.Parallel()

		for _, raw := range []string{
			"file:///etc/passwd",
			"ftp://example.com/mcp",
			"gopher://example.com/",
			"ws://example.com/mcp",
			"example.com/mcp",
			"//example.com/mcp",
			"https://",
			"https:///mcp",
			"http:example.com",
			"https://user:password@example.com/mcp",
			"https://token@example.com/mcp",
			"://bad",
			"http://exa mple.com/",
			"",
		} {
			require.Error(t, netguard.CheckURL(raw, false), raw)
			require.Error(t, netguard.CheckURL(raw, true), raw)
		}
	})
}

func TestCheckRedirect(t *testing.T) {
	t.Parallel()

	post := func(raw string) *http.Request {
		req, err := http.NewRequest(http.MethodPost, raw, nil)
		require.NoError(t, err)
		return req
	}
	via := []*http.Request{post("https://mcp.example.com/mcp")}

	require.NoError(t, netguard.CheckRedirect(false)(post("https://mcp2.example.com/mcp"), via))

	err := netguard.CheckRedirect(false)(post("http://10.0.0.1/mcp"), via)
	require.ErrorIs(t, err, netguard.ErrNotAllowed)
	require.NoError(t, netguard.CheckRedirect(true)(post("http://10.0.0.1/mcp"), via))

	require.Error(t, netguard.CheckRedirect(true)(post("ftp://mcp.example.com/"), via))

	get, err := http.NewRequest(http.MethodGet, "https://mcp.example.com/other", nil)
	require.NoError(t, err)
	require.ErrorContains(t, netguard.CheckRedirect(true)(get, via), "changes POST to GET")

	long := make([]*http.Request, netguard.MaxRedirects)
	for i := range long {
		long[i] = via[0]
	}
	require.Error(t, netguard.CheckRedirect(true)(post("https://mcp.example.com/mcp"), long))
}

func TestClient(t *testing.T) {
	t.Parallel()

	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(server.Close)

	get := func(c *http.Client, url string) error {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	// The test server listens on loopback: the dial guard refuses it.
	guarded := netguard.Client(false, 5*time.Second)
	err := get(guarded, server.URL)
	require.ErrorIs(t, err, netguard.ErrNotAllowed)
	var addrErr *netguard.AddrError
	require.True(t, errors.As(err, &addrErr), "%v", err)
	require.True(t, addrErr.Addr.IsLoopback())

	require.NoError(t, get(netguard.Client(true, 5*time.Second), server.URL))

	// A proxy would resolve names itself: the guarded transport uses none.
	require.NotNil(t, netguard.NewTransport().Proxy)
	require.Nil(t, netguard.Guard(netguard.NewTransport()).Proxy)
}

// TestGuard_OverridesTheTransportsTLSDialer: a transport handed to Guard
// (an MCP client's configured HTTPClient) may carry a TLS dialer of its
// own, the deprecated DialTLS included, which net/http prefers to
// DialContext for https: the guard must not be bypassed through it.
func TestGuard_OverridesTheTransportsTLSDialer(t *testing.T) {
	t.Parallel()
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(server.Close)

	base := server.Client().Transport.(*http.Transport).Clone()
	tlsConfig := base.TLSClientConfig
	//lint:ignore SA1019 the deprecated field is what is tested
	base.DialTLS = func(network, addr string) (net.Conn, error) {
		return tls.Dial(network, addr, tlsConfig)
	}
	resp, err := (&http.Client{Transport: base}).Get(server.URL)
	require.NoError(t, err, "unguarded, the dialer reaches the server")
	resp.Body.Close()

	_, err = (&http.Client{Transport: netguard.Guard(base)}).Get(server.URL)
	require.ErrorIs(t, err, netguard.ErrNotAllowed)
}

// TestClient_LoopbackSpellings: the ways of writing a loopback or
// unspecified address that some parsers read as one (decimal, octal, hex,
// short forms, IPv4-mapped IPv6, a name) reach nothing through the guarded
// client, while the unguarded client shows which of them lead to the
// server.
func TestClient_LoopbackSpellings(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	ln, err := net.Listen("tcp", ":0") // every local address, IPv6 ones too where there are
	require.NoError(t, err)
	server.Listener = ln
	server.Start()
	t.Cleanup(server.Close)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	get := func(c *http.Client, host string) error {
		resp, err := c.Get("http://" + net.JoinHostPort(host, port) + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	hosts := []string{"localhost", "127.0.0.1", "127.1", "2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001",
		"0.0.0.0", "0", "::1", "::", "::ffff:127.0.0.1", "0:0:0:0:0:ffff:7f00:1"}
	guarded, open := netguard.Client(false, 5*time.Second), netguard.Client(true, 5*time.Second)
	reached := 0
	for _, host := range hosts {
		require.Error(t, get(guarded, host), host)
		if get(open, host) == nil {
			reached++
		}
	}
	t.Logf("the unguarded client reached the server through %d of %d spellings", reached, len(hosts))
	require.Zero(t, hits.Load()-int32(reached), "only the unguarded client reached the server")
	require.GreaterOrEqual(t, reached, 3, "localhost, 127.0.0.1 and 0.0.0.0 at least")
}

// TestClient_BoundsResponseHeaders: the servers an organization names
// choose their answers' headers; net/http's default would buffer up to
// 10 MB of them per request, in every worker at once.
func TestClient_BoundsResponseHeaders(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size, _ := strconv.Atoi(r.URL.Query().Get("size"))
		w.Header().Set("X-Filler", strings.Repeat("x", size))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(server.Close)

	c := netguard.Client(true, 5*time.Second)
	get := func(size int) error {
		resp, err := c.Get(server.URL + "?size=" + strconv.Itoa(size))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	require.NoError(t, get(100<<10), "100 kB of headers are read")
	require.ErrorContains(t, get(2<<20), "server response headers exceeded")
}

// TestRequestError_WithoutTheURL: a failed request's text keeps what
// failed and drops the URL, whose path or query may be a secret.
func TestRequestError_WithoutTheURL(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	_, err = netguard.Client(true, 5*time.Second).Post("http://"+addr+"/services/T0/pathsecret?token=querysecret", "application/json", nil)
	require.Error(t, err)
	require.Contains(t, err.Error(), "querysecret", "Go's own text quotes the URL")
	text := netguard.RequestError(err)
	require.NotContains(t, text, "pathsecret")
	require.NotContains(t, text, "querysecret")
	require.Contains(t, text, "Post: dial tcp "+addr)
	require.Equal(t, "plain", netguard.RequestError(errors.New("plain")))
}
