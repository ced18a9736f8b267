package apptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
)

// SSEEvent is one Server-Sent Event.
type SSEEvent struct {
	ID    string
	Event string
	Data  map[string]any

	raw string
}

// SSE is an open event stream.
type SSE struct {
	b      *Bundle
	Resp   *http.Response
	events chan SSEEvent
	cancel context.CancelFunc
}

// Open calls path with token and returns the answer without reading its
// body; the caller closes it.
func (b *Bundle) Open(ctx context.Context, path, token string, headers ...string) *http.Response {
	b.T.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", b.URL+path, nil)
	require.NoError(b.T, err)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(b.T, err)
	// An event stream's events are checked as they are read (SSE.Next);
	// any other answer is small, read here to check it.
	var body []byte
	if resp.StatusCode != http.StatusOK {
		body, err = io.ReadAll(resp.Body)
		require.NoError(b.T, err)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	b.checkContract(req, nil, resp, body)
	return resp
}

// Stream opens an event stream and reads it in the background until the
// test ends or Close is called.
func (b *Bundle) Stream(path, token string, headers ...string) *SSE {
	b.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp := b.Open(ctx, path, token, headers...)
	require.Equal(b.T, http.StatusOK, resp.StatusCode)
	require.Equal(b.T, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &SSE{b: b, Resp: resp, events: make(chan SSEEvent, 1000), cancel: cancel}
	go func() {
		defer close(s.events)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev SSEEvent
		var data strings.Builder
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if data.Len() > 0 {
					ev.raw = data.String()
					_ = json.Unmarshal([]byte(ev.raw), &ev.Data)
					s.events <- ev
				}
				ev, data = SSEEvent{}, strings.Builder{}
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				data.WriteString(line[6:])
			}
		}
	}()
	b.T.Cleanup(s.Close)
	return s
}

// Next returns the next event, failing the test after timeout.
func (s *SSE) Next(timeout time.Duration) SSEEvent {
	s.b.T.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.b.T.Fatal("the event stream ended")
		}
		if s.b.Contract != nil {
			if err := s.b.Contract.CheckEvent(ev.ID, ev.Event, []byte(ev.raw)); err != nil {
				s.b.T.Errorf("OpenAPI contract: %v\ndata: %s", err, ev.raw)
			}
		}
		return ev
	case <-time.After(timeout):
		s.b.T.Fatalf("no event within %s", timeout)
	}
	return SSEEvent{}
}

// Ended reports whether the stream ended within timeout, draining events.
func (s *SSE) Ended(timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// Close ends the stream.
func (s *SSE) Close() { s.cancel() }
