package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// TestStream_WritesInBoundedPieces: a stream catching up on large events
// writes them in pieces of about 256 KiB, not a whole page at once (100
// events of up to a few MiB each, encoded in memory together, per stream).
// The pieces are the chunks of the chunked answer: the test reads them raw.
func TestStream_WritesInBoundedPieces(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-pieces")
	const n = 80
	text := strings.Repeat("x", 30000)
	batch := make([]any, n)
	for i := range batch {
		batch[i] = envelope(fmt.Sprintf("pieces-%d", i), map[string]any{"approval": "required", "args": map[string]any{"channel": "C0123456789", "text": text}})
	}
	r := b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": batch})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	conn, err := net.Dial("tcp", strings.TrimPrefix(b.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = fmt.Fprintf(conn, "GET /v1/events?after=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", b.Owner())
	require.NoError(t, err)
	rd := bufio.NewReader(conn)
	for { // the header
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		if line == "\r\n" {
			break
		}
	}
	var body strings.Builder
	largest, total := 0, 0
	for strings.Count(body.String(), "\nevent: action_approval_request\n") < n {
		line, err := rd.ReadString('\n')
		require.NoError(t, err, "after %d bytes: %.300q", body.Len(), body.String())
		size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		require.NoError(t, err, "chunk size %q", line)
		chunk := make([]byte, size+2)
		_, err = io.ReadFull(rd, chunk)
		require.NoError(t, err)
		body.Write(chunk[:size])
		largest, total = max(largest, int(size)), total+int(size)
	}
	require.Greater(t, total, 2<<20, "the events are larger than a piece")
	require.Less(t, largest, 512<<10, "the largest write")
}
