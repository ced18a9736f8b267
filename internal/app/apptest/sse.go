package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/client"
)

// SSEEvent is one Server-Sent Event.
type SSEEvent struct {
	ID    string
	Event string
	Data  map[string]any

	raw []byte
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
	header := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		header.Set(headers[i], headers[i+1])
	}
	resp, err := b.Client(token).Open(ctx, path, header)
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
	b.checkContract(sentRequest(resp), nil, resp, body)
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
		stream := client.NewStream(resp.Body, "")
		defer stream.Close()
		for {
			ev, err := stream.Next()
			if err != nil {
				return
			}
			out := SSEEvent{ID: ev.ID, Event: ev.Event, raw: ev.Data}
			_ = json.Unmarshal(ev.Data, &out.Data)
			s.events <- out
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
			if err := s.b.Contract.CheckEvent(ev.ID, ev.Event, ev.raw); err != nil {
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
