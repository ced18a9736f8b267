package client

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"
)

// maxEventSize bounds one line of an event stream.
const maxEventSize = 4 << 20

// Event is one Server-Sent Event: its id (the stream position to resume
// after), its event name and its data.
type Event struct {
	ID    string
	Event string
	Data  []byte
}

// Decode decodes the event's data into v.
func (e *Event) Decode(v any) error { return json.Unmarshal(e.Data, v) }

// Notice is the data of an event of the API's streams (the fields the
// client's users read; the API sends more).
type Notice struct {
	EventID      int64      `json:"event_id"`
	EventType    string     `json:"event_type"`
	InvocationID string     `json:"invocation_id"`
	OccurredAt   time.Time  `json:"occurred_at"`
	Status       string     `json:"status"`
	Mode         string     `json:"mode"`
	DecidedBy    *string    `json:"decided_by"`
	Reason       *string    `json:"reason"`
	Success      *bool      `json:"success"`
	Invocation   Invocation `json:"invocation"`
}

// ContentTypeError is a 200 answer to an event stream's request that is
// not an event stream.
type ContentTypeError struct{ ContentType string }

func (e *ContentTypeError) Error() string {
	return fmt.Sprintf("the answer is %q, not an event stream", e.ContentType)
}

func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

func readAll(r io.Reader) ([]byte, error) { return io.ReadAll(io.LimitReader(r, maxEventSize)) }

// Stream reads the events of one event stream.
type Stream struct {
	body   io.ReadCloser
	sc     *bufio.Scanner
	lastID string
}

// NewStream reads events from body, an event stream opened after lastID.
func NewStream(body io.ReadCloser, lastID string) *Stream {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxEventSize)
	return &Stream{body: body, sc: sc, lastID: lastID}
}

// Next returns the next event, skipping comments. The data of an event of
// several data lines is those lines joined by newlines. At the stream's
// end it returns io.ErrUnexpectedEOF (a stream of the API never ends by
// itself), or the error that ended the read.
func (s *Stream) Next() (Event, error) {
	var ev Event
	var data strings.Builder
	hasData := false
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			if !hasData {
				ev = Event{}
				continue
			}
			ev.Data = []byte(data.String())
			if ev.ID != "" {
				s.lastID = ev.ID
			}
			return ev, nil
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		}
	}
	if err := s.sc.Err(); err != nil {
		return Event{}, err
	}
	return Event{}, io.ErrUnexpectedEOF
}

// LastID is the id of the last event read with one, or the id the stream
// was opened after: where to resume (Session.Events, Client.Events).
func (s *Stream) LastID() string { return s.lastID }

// Close ends the stream.
func (s *Stream) Close() error { return s.body.Close() }
