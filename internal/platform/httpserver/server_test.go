package httpserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bound is how long a test waits for what must happen; the timeouts under
// test are far shorter.
const bound = 10 * time.Second

// serve runs a Server for handler on loopback under cfg and returns its
// address.
func serve(t *testing.T, handler http.Handler, cfg *Config) (*Server, string) {
	t.Helper()
	s, err := New(handler, cfg, nil)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		require.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return s, ln.Addr().String()
}

// dial opens a raw connection to addr, closed at cleanup.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// requireClosed reads c until the server closes it, and returns what it
// read; it fails when c is still open after bound.
func requireClosed(t *testing.T, c net.Conn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(bound)))
	got, err := io.ReadAll(c)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection open (read %q)", got)
	return string(got)
}

// requireOpen checks that c is neither closed nor answered: a read waits
// until its short deadline.
func requireOpen(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	n, err := c.Read(make([]byte, 1))
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "read %d bytes, error %v", n, err)
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }

func TestServer_SlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	read := make(chan error, 1)
	_, addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		read <- err
		if err != nil {
			http.Error(w, "incomplete body", http.StatusRequestTimeout)
			return
		}
		ok(w, r)
	}), &Config{ReadTimeout: 300 * time.Millisecond, WriteTimeout: bound})

	c := dial(t, addr)
	_, err := fmt.Fprint(c, "POST /v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"a\":")
	require.NoError(t, err)
	got := requireClosed(t, c)
	require.NotContains(t, got, "200 OK")
	select {
	case err := <-read:
		var ne net.Error
		require.True(t, errors.As(err, &ne) && ne.Timeout(), "the handler's read ends with a timeout, got %v", err)
	case <-time.After(bound):
		t.Fatal("the handler never finished reading")
	}
}

func TestServer_StalledHeaderIsCutOff(t *testing.T) {
	t.Parallel()
	_, addr := serve(t, http.HandlerFunc(ok), &Config{ReadHeaderTimeout: 300 * time.Millisecond})
	c := dial(t, addr)
	_, err := fmt.Fprint(c, "GET /readyz HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	require.NotContains(t, requireClosed(t, c), "200 OK")
}

func TestServer_IdleKeepAliveIsClosed(t *testing.T) {
	t.Parallel()
	_, addr := serve(t, http.HandlerFunc(ok), &Config{IdleTimeout: 300 * time.Millisecond})
	c := dial(t, addr)
	_, err := fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "ok", string(body))
	require.False(t, resp.Close, "a keep-alive answer")
	require.Empty(t, requireClosed(t, c), "the idle connection is closed without a word")
}

// TestServer_LongHandlerKeepsItsContext: once a request has arrived whole,
// the read timeout no longer applies, so net/http does not cancel the
// context of a handler that runs past it.
func TestServer_LongHandlerKeepsItsContext(t *testing.T) {
	t.Parallel()
	const readTimeout = 200 * time.Millisecond
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusServiceUnavailable)
		case <-time.After(5 * readTimeout):
			ok(w, r)
		}
	})
	_, addr := serve(t, handler, &Config{ReadTimeout: readTimeout, WriteTimeout: bound})
	client := &http.Client{Timeout: bound}
	for _, method := range []string{"GET", "POST"} {
		req, err := http.NewRequest(method, "http://"+addr+"/", nil)
		require.NoError(t, err)
		if method == "POST" {
			req, err = http.NewRequest(method, "http://"+addr+"/", stringsReader(`{"a":1}`))
			require.NoError(t, err)
		}
		resp, err := client.Do(req)
		require.NoError(t, err, method)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", method, body)
	}
}

func stringsReader(s string) io.Reader { return &stringReader{s: s} }

// stringReader hides its length, so the request is sent chunked.
type stringReader struct{ s string }

func (r *stringReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

// TestServer_ExtendWrite: a handler that waits longer than the write
// timeout answers when it extended its deadline, and its answer is lost
// when it did not.
func TestServer_ExtendWrite(t *testing.T) {
	t.Parallel()
	const writeTimeout = 200 * time.Millisecond
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("extend") != "" {
			ExtendWrite(w, r, 5*writeTimeout)
		}
		time.Sleep(3 * writeTimeout)
		ok(w, r)
	})
	_, addr := serve(t, handler, &Config{WriteTimeout: writeTimeout})
	client := &http.Client{Timeout: bound}

	resp, err := client.Get("http://" + addr + "/?extend=1")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "ok", string(body))

	resp, err = client.Get("http://" + addr + "/")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	require.Error(t, err, "without ExtendWrite the write timeout cuts the answer off")
}

// TestServer_WriteOverTime: a response written over longer than the write
// timeout (a stream, a long wait before the answer) gets all through when
// each write moves the deadline, and is cut off when none does.
func TestServer_WriteOverTime(t *testing.T) {
	t.Parallel()
	const writeTimeout = 200 * time.Millisecond
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("over") != "" {
			w = WriteOverTime(w, r)
		}
		rc := http.NewResponseController(w)
		for range 6 {
			time.Sleep(writeTimeout / 2)
			_, _ = io.WriteString(w, "x")
			_ = rc.Flush()
		}
		time.Sleep(2 * writeTimeout) // a wait longer than the timeout
		ok(w, r)
	})
	_, addr := serve(t, handler, &Config{WriteTimeout: writeTimeout})
	client := &http.Client{Timeout: bound}

	resp, err := client.Get("http://" + addr + "/?over=1")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "xxxxxxok", string(body))

	resp, err = client.Get("http://" + addr + "/")
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	require.False(t, err == nil && string(body) == "xxxxxxok", "without WriteOverTime the write timeout cuts the stream off")
}

// TestServer_MaxConnsEvictsStalledConnections: with every slot held by a
// connection that has not sent a whole request header, a new connection
// takes the oldest one's place and is answered at once; the server never
// holds more than MaxConns.
func TestServer_MaxConnsEvictsStalledConnections(t *testing.T) {
	t.Parallel()
	const maxConns = 5
	s, addr := serve(t, http.HandlerFunc(ok), &Config{MaxConns: maxConns, ReadHeaderTimeout: time.Minute})
	var stalled []net.Conn
	for range 2 * maxConns {
		c := dial(t, addr)
		_, err := fmt.Fprint(c, "GET /readyz HTTP/1.1\r\nHost: x\r\n")
		require.NoError(t, err)
		stalled = append(stalled, c)
	}
	// The first ones were evicted as the later ones came in; the last
	// maxConns are held (accepted, so evictable, in order).
	for _, c := range stalled[:maxConns] {
		require.NotContains(t, requireClosed(t, c), "200 OK")
	}
	require.Eventually(t, func() bool { return s.listener().open() == maxConns }, bound, 10*time.Millisecond)

	client := &http.Client{Timeout: bound}
	for range 3 {
		resp, err := client.Get("http://" + addr + "/readyz")
		require.NoError(t, err, "a probe is answered although stalled connections hold every slot")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, "ok", string(body))
		require.LessOrEqual(t, s.listener().open(), maxConns)
	}
	// Stalled connections newer than the probe's are still open: only the
	// oldest made room.
	requireOpen(t, stalled[len(stalled)-1])
}

// TestServer_MaxConnsQueuesWhenAllAreBusy: a connection serving a request
// is never evicted; a new one waits until a slot frees.
func TestServer_MaxConnsQueuesWhenAllAreBusy(t *testing.T) {
	t.Parallel()
	const maxConns = 2
	release := make(chan struct{})
	var mu sync.Mutex
	running, most := 0, 0
	s, addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		ok(w, r)
	}), &Config{MaxConns: maxConns, WriteTimeout: bound})

	errs := make(chan error, maxConns+1)
	get := func() {
		resp, err := (&http.Client{Timeout: bound}).Get("http://" + addr + "/")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		errs <- err
	}
	for range maxConns {
		go get()
	}
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return running == maxConns }, bound, 10*time.Millisecond)
	extra := dial(t, addr) // waits in the accept queue
	_, err := fmt.Fprint(extra, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	requireOpen(t, extra)
	require.Equal(t, maxConns, s.listener().open())

	close(release)
	for range maxConns {
		require.NoError(t, <-errs)
	}
	require.NoError(t, extra.SetReadDeadline(time.Now().Add(bound)))
	resp, err := http.ReadResponse(bufio.NewReader(extra), nil)
	require.NoError(t, err, "the queued connection is served once a slot frees")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, maxConns, most)
}

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{ReadTimeout: -1}, {MaxConns: -1}, {MaxOrgRequests: -1}, {UnauthenticatedRate: -1}} {
		_, err := New(http.NotFoundHandler(), &cfg, nil)
		require.Error(t, err, "%+v", cfg)
	}
	c := (&Config{}).WithDefaults()
	require.Positive(t, c.MaxConns)
	require.LessOrEqual(t, c.MaxConns, maxDerivedConns)
}
