package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestServe_StalledSocketsBeyondTheDescriptorLimit runs the real binary
// with 256 descriptors and opens more stalled sockets than that (each sends
// half a request header, and the header timeout is a minute): the process
// keeps its descriptors, and answers /readyz and an authenticated request
// while the sockets are still stalled. Before http.max_conns, accept failed
// with EMFILE until the stalled sockets timed out.
func TestServe_StalledSocketsBeyondTheDescriptorLimit(t *testing.T) {
	t.Parallel()
	const descriptors, sockets = 256, 300
	env := append(baseEnv(pgtest.URL(t), "http://127.0.0.1:1"), "OUTBOXD_HTTP_READ_HEADER_TIMEOUT=1m")
	addr := freeAddr(t)
	args := []string{"serve", "--role=api", "--http-addr", addr}
	cmd := exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, descriptors), os.Args[0]}, args...)...)
	p := start(t, cmd, env, args)
	waitReady(t, addr, p)
	require.Contains(t, p.output.String(), fmt.Sprintf("max_conns=%d", descriptors/2), "max_conns is half the descriptor limit")

	for i := range sockets {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err, "socket %d", i)
		defer c.Close()
		_, err = fmt.Fprint(c, "GET /readyz HTTP/1.1\r\nHost: x\r\n")
		require.NoError(t, err)
	}

	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get("http://" + addr + "/readyz")
	require.NoError(t, err, "readyz while %d sockets stall: %s", sockets, p.output)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))

	b := &apptest.Bundle{T: t, URL: "http://" + addr, Secret: "separate-process-secret-0123"}
	r := b.Do("GET", "/v1/invocations", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.NotContains(t, p.output.String(), "too many open files")

	p.stop(t)
}
