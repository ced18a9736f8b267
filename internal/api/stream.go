package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/feed"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/revocation"
)

// StreamConfig tunes the event streams (Server-Sent Events).
type StreamConfig struct {
	// Heartbeat is how often an idle stream sends a comment, so proxies
	// keep it open. Default 15s.
	Heartbeat time.Duration
	// WriteTimeout bounds one write to a client; a client that does not
	// take its events within it is disconnected and resumes from its last
	// event id. Default 10s.
	WriteTimeout time.Duration
	// Poll is how often a stream reads the table without a notification, a
	// safety net for a lost listener connection. Default 5s.
	Poll time.Duration
}

// WithDefaults returns a copy with unset fields defaulted.
func (c StreamConfig) WithDefaults() StreamConfig {
	return StreamConfig{
		Heartbeat:    cmp.Or(c.Heartbeat, 15*time.Second),
		WriteTimeout: cmp.Or(c.WriteTimeout, 10*time.Second),
		Poll:         cmp.Or(c.Poll, 5*time.Second),
	}
}

// untilTokenEnds returns a context that ends, besides with ctx, when c's
// token is revoked or expires (revocation.Ends), the verifier's leeway
// after its exp, so that a client reconnecting then is refused rather
// than let in to a stream that ends at once: what a long-lived stream
// holds.
func (s *Server) untilTokenEnds(ctx context.Context, c *auth.Claims) (context.Context, func()) {
	var w revocation.Watcher
	if s.revocations != nil {
		w = s.revocations
	}
	return revocation.Ends(ctx, w, c, s.verifier.Leeway())
}

// streamBatch is how many events a stream reads per query.
const streamBatch = 100

// streamWriteBytes is about how much a stream encodes before it writes.
const streamWriteBytes = 256 << 10

// heldRetry is how soon a stream reads again when events exist that are
// not yet safe to deliver (an older transaction is still open).
const heldRetry = 100 * time.Millisecond

// NoticeData is the data of one notice, on the event stream and in webhook
// payloads: the invocation as the API shows it (redacted) now, and what the
// event said.
type NoticeData struct {
	EventID      int64     `json:"event_id"`
	EventType    string    `json:"event_type"`
	InvocationID string    `json:"invocation_id"`
	OccurredAt   time.Time `json:"occurred_at"`
	// Status is the status the event moved the invocation to; the
	// invocation's own status may be later already.
	Status invocation.Status `json:"status"`
	Mode   string            `json:"mode"`
	// DecidedBy is who approved or denied (approval results).
	DecidedBy *string `json:"decided_by,omitempty"`
	Reason    *string `json:"reason,omitempty"`
	// Success is set on action_completed: completed (a provider conflict
	// included) is a success; failed, skipped and cancelled are not.
	Success    *bool          `json:"success,omitempty"`
	Invocation invocationView `json:"invocation"`
}

// Notice builds the data of one feed item.
func Notice(item *invocation.FeedItem) NoticeData {
	d := NoticeData{
		EventID: item.ID, EventType: string(item.Type), InvocationID: item.InvocationID.String(), OccurredAt: item.CreatedAt,
		Status: item.To, Mode: item.Invocation.Mode, Reason: nilIfEmpty(item.Reason), Invocation: viewInvocation(item.Invocation),
	}
	switch item.Notice {
	case invocation.NoticeApprovalResult:
		d.DecidedBy = nilIfEmpty(item.Actor)
	case invocation.NoticeCompleted:
		ok := item.To == invocation.StatusCompleted
		d.Success = &ok
	}
	return d
}

// streamRoutes are the routes that answer with an event stream.
var streamRoutes = map[string]bool{
	"GET /v1/events":                       true,
	"GET /v1/sessions/{session_id}/events": true,
}

// stream serves the organization's notices (GET /v1/events) or a session's
// (GET /v1/sessions/{session_id}/events) as Server-Sent Events: id is the
// event's position (invocation.Cursor.Position), which grows from one
// message to the next, event the notice kind, data NoticeData.
// Last-Event-ID (or ?after=) resumes after that position, or after an event
// id (data.event_id); without either the stream starts now.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	p := &feed.Params{Org: c.Org, SessionID: r.PathValue("session_id"), Limit: streamBatch}
	for _, v := range r.URL.Query()["types"] {
		for _, t := range strings.Split(v, ",") {
			n := invocation.Notice(strings.TrimSpace(t))
			if !slices.Contains(invocation.Notices, n) {
				return invalidField("types", "types: unknown event type %q (use action_approval_request, action_approval_result, action_completed)", t)
			}
			p.Notices = append(p.Notices, n)
		}
	}
	after, field := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if after == "" {
		after, field = r.URL.Query().Get("after"), "after"
	}
	var err error
	if after == "" {
		p.After, err = s.feeds.Now(r.Context())
	} else if pos, ok := invocation.ParsePosition(after); ok {
		p.After, err = s.feeds.Resume(r.Context(), pos)
		if errors.Is(err, feed.ErrUnknownPosition) {
			return invalidField(field, "%s: %s is not the id of an event this stream has sent", field, after)
		}
	} else {
		// An event id, as in data.event_id.
		id, perr := strconv.ParseInt(after, 10, 64)
		if perr != nil || id < 0 {
			return invalidField(field, "%s must be the id of an event the stream sent, or an event id (a non-negative integer)", field)
		}
		p.After, err = s.feeds.Cursor(r.Context(), c.Org, id)
		if errors.Is(err, feed.ErrUnknownPosition) {
			return invalidField(field, "%s: no event %d in this organization", field, id)
		}
	}
	if err != nil {
		return err
	}

	// The stream ends once its token is revoked (at the next refresh of
	// the revocations) or expires; a reconnect is then refused.
	ctx, stop := s.untilTokenEnds(r.Context(), c)
	defer stop()
	bell, hangUp := s.feeds.Subscribe(ctx, c.Org)
	defer hangUp()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	cfg := s.streams
	write := func(text string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
		if _, err := fmt.Fprint(w, text); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(": connected\n\n") {
		return nil
	}
	heartbeat := time.NewTicker(cfg.Heartbeat)
	defer heartbeat.Stop()
	for {
		items, held, err := s.feeds.Feed(ctx, p)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			s.logger.WarnContext(ctx, "event stream: reading events", "organization_id", c.Org, "error", err)
			return nil
		}
		// The page is written in pieces of about streamWriteBytes, each
		// event's row let go once encoded: an event carries its
		// invocation, params and result included, so a page of them
		// encoded together could take hundreds of MiB per stream.
		var b strings.Builder
		send := func() bool {
			if b.Len() == 0 {
				return true
			}
			ok := write(b.String())
			b.Reset()
			if !ok {
				s.logger.InfoContext(ctx, "event stream: client too slow or gone; disconnected", "organization_id", c.Org)
				return false
			}
			heartbeat.Reset(cfg.Heartbeat)
			return true
		}
		n := len(items)
		if n > 0 {
			p.After = items[n-1].Cursor
		}
		for i := range items {
			it := items[i]
			items[i] = invocation.FeedItem{}
			// A token's sources claim limits what it sees as it limits
			// what it may invoke: a session's stream does not show a
			// narrowed token the invocations of other sources made in the
			// session with another token.
			if !c.MaySource(it.Invocation.Integration) {
				continue
			}
			data, err := json.Marshal(Notice(&it))
			if err != nil {
				return fmt.Errorf("encoding event: %w", err)
			}
			fmt.Fprintf(&b, "id: %s\nevent: %s\ndata: %s\n\n", it.Cursor.Position(), it.Notice, data)
			if b.Len() >= streamWriteBytes && !send() {
				return nil
			}
		}
		if !send() {
			return nil
		}
		if n == streamBatch {
			continue
		}
		wait := cfg.Poll
		if held {
			wait = heldRetry
		}
		timer := time.NewTimer(wait)
	idle:
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				switch cause := context.Cause(ctx); {
				case errors.Is(cause, revocation.ErrRevoked):
					write(": token revoked\n\n")
				case errors.Is(cause, revocation.ErrExpired):
					write(": token expired\n\n")
				}
				return nil
			case <-s.closing:
				timer.Stop()
				return nil
			case <-heartbeat.C:
				if !write(": heartbeat\n\n") {
					timer.Stop()
					return nil
				}
			case <-bell:
				timer.Stop()
				break idle
			case <-timer.C:
				break idle
			}
		}
	}
}
