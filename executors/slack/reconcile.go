package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
)

const (
	// historyPageSize is the limit of each page of the look-up. Slack
	// advises no more than 200.
	historyPageSize = 200

	// maxHistoryPages bounds the look-up. Only what was posted since the
	// invocation's first attempt is read, so it ends long before this in
	// practice.
	maxHistoryPages = 50

	// clockSkew is how much earlier than the first attempt the look-up
	// starts, in case Slack's clock is behind outboxd's.
	clockSkew = 10 * time.Minute
)

// conversationID matches the IDs of channels, private channels and direct
// messages. A post may name a channel ("#general"); Slack's history only
// takes an ID.
var conversationID = regexp.MustCompile(`^[CGD][A-Z0-9]+$`)

// unreadableHistory are the ok:false codes of a look-up that the Slack app
// cannot make for this channel or with this token: the message is posted
// without the look-up rather than the action failing.
var unreadableHistory = map[string]bool{
	"missing_scope":     true,
	"channel_not_found": true,
	"not_in_channel":    true,
	"thread_not_found":  true,
}

// historyAnswer is the part of a conversations.history or
// conversations.replies answer the look-up reads.
type historyAnswer struct {
	Messages         []json.RawMessage `json:"messages"`
	HasMore          bool              `json:"has_more"`
	ResponseMetadata struct {
		NextCursor string `json:"next_cursor"`
	} `json:"response_metadata"`
}

// postedMessage is the part of a message the look-up matches.
type postedMessage struct {
	TS       string           `json:"ts"`
	Metadata *messageMetadata `json:"metadata"`
}

// findPosted looks for the message an earlier attempt of the invocation
// posted in p's channel (or thread), by the idempotency key in its
// metadata, among the messages since the first attempt. It returns the
// result a fresh post would have (the channel, the ts and the message),
// as a conflict, or nil when there is none; looked says the look-up was
// made. When it cannot be made (a token without the history scope, a
// channel given by name, a channel the app cannot read), it tells
// ec.Unreconciled and returns nil and false, so the message is posted as
// it was before look-ups existed.
func (s *client) findPosted(ctx context.Context, p *SendMessageParams, ec executors.ExecContext) (found *executors.Result, looked bool, err error) {
	if !conversationID.MatchString(p.Channel) {
		unreconciled(ec, executors.Unreconciled{Reason: "channel_name"})
		return nil, false, nil
	}
	method := "conversations.history"
	query := url.Values{
		"channel":              {p.Channel},
		"limit":                {strconv.Itoa(historyPageSize)},
		"include_all_metadata": {"true"},
	}
	if p.ThreadTS != "" {
		// A reply is not in the channel's history but in its thread's.
		method = "conversations.replies"
		query.Set("ts", p.ThreadTS)
	}
	if from := lookupStart(ec); !from.IsZero() {
		query.Set("oldest", fmt.Sprintf("%d.%06d", from.Unix(), from.Nanosecond()/1000))
	}
	// A look-up Slack broke off on a later page (its limit of one history
	// call a minute) goes on at that page in the run after the wait:
	// starting over would read the first page again and meet the limit on
	// the next one every time.
	at := lookupProgress{Query: method + "?" + query.Encode()}
	resumed := at.resume(ec)
	brokenOff := func(err error) (*executors.Result, bool, error) {
		at.save(ec)
		return nil, false, err
	}
	for at.Pages < maxHistoryPages {
		query.Del("cursor")
		if at.Cursor != "" {
			query.Set("cursor", at.Cursor)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.baseURL+"/"+method+"?"+query.Encode(), nil)
		if err != nil {
			return nil, false, fmt.Errorf("slack: building %s request: %w", method, err)
		}
		raw, answer, err := s.call(ctx, ec, req)
		var slackErr *executors.Error
		if resumed && errors.As(err, &slackErr) && slackErr.Code == "invalid_cursor" {
			// Slack no longer takes the cursor of the run before: start over.
			at, resumed = lookupProgress{Query: at.Query}, false
			continue
		}
		if errors.As(err, &slackErr) && unreadableHistory[slackErr.Code] {
			u := executors.Unreconciled{Reason: slackErr.Code}
			if slackErr.Code == "missing_scope" {
				u.CredentialNote = "reconcile_unavailable: the Slack token cannot read message history"
				if slackScopes.MatchString(answer.Needed) {
					u.CredentialNote = "reconcile_unavailable: missing " + answer.Needed + " scope"
				}
			}
			unreconciled(ec, u)
			return nil, false, nil
		}
		if errors.As(err, &slackErr) && slackErr.RetryAfter > 0 {
			// History has its own limit (1 a minute for an app outside the
			// Slack Marketplace): the post waits for it, the others do not.
			limited := *slackErr
			limited.OtherLimit = true
			limited.Message = "Slack rate-limited " + method + ", the look-up for the message of an earlier attempt (HTTP 429)"
			if slackErr.Code != "ratelimited" { // a 5xx with Retry-After
				limited.Message = slackErr.Message + " to " + method + ", the look-up for the message of an earlier attempt"
			}
			return brokenOff(&limited)
		}
		if err != nil {
			return brokenOff(err)
		}
		var page historyAnswer
		if err := json.Unmarshal(raw, &page); err != nil || page.Messages == nil {
			return brokenOff(&executors.Error{
				Code:      "invalid_response",
				Message:   "Slack answered " + method + " without a list of messages",
				Retryable: true,
			})
		}
		for _, m := range page.Messages {
			var msg postedMessage
			if json.Unmarshal(m, &msg) != nil || msg.TS == "" || msg.Metadata == nil {
				continue
			}
			if msg.Metadata.EventType == metadataEventType && msg.Metadata.EventPayload.IdempotencyKey == ec.IdempotencyKey {
				found, err := foundResult(p.Channel, msg.TS, m)
				return found, err == nil, err
			}
		}
		if !page.HasMore {
			return nil, true, nil
		}
		next := page.ResponseMetadata.NextCursor
		if next == "" {
			// More messages follow, unread: the post may be among them.
			return brokenOff(&executors.Error{
				Code:      "invalid_response",
				Message:   "Slack answered " + method + " with more messages to read but no cursor to read them",
				Retryable: true,
			})
		}
		at.Cursor, at.Pages = next, at.Pages+1
	}
	return nil, false, &executors.Error{
		Code: "idempotency_unverified",
		Message: fmt.Sprintf("could not tell whether an earlier attempt already posted the message: the look-up read %d "+
			"pages of the channel's history without reaching the invocation's first attempt; check Slack before invoking again", maxHistoryPages),
	}
}

// lookupProgress is how far a look-up got (ExecContext.Resume): its
// query without the cursor, the cursor of the next page to read and how
// many pages it read.
type lookupProgress struct {
	Query  string `json:"query"`
	Cursor string `json:"cursor"`
	Pages  int    `json:"pages"`
}

// resume takes up where the run before broke off the same look-up, and
// reports whether it did. Progress of another query (another channel or
// thread, another window) is not taken.
func (at *lookupProgress) resume(ec executors.ExecContext) bool {
	var saved lookupProgress
	if len(ec.Resume.Saved) == 0 || json.Unmarshal(ec.Resume.Saved, &saved) != nil ||
		saved.Query != at.Query || saved.Cursor == "" || saved.Pages < 1 || saved.Pages >= maxHistoryPages {
		return false
	}
	*at = saved
	return true
}

// save keeps the progress of a look-up broken off past its first page for
// the next run. Nothing was posted since those pages were read: the post
// comes only after a look-up that ended.
func (at *lookupProgress) save(ec executors.ExecContext) {
	if at.Cursor == "" || ec.Resume.Save == nil {
		return
	}
	raw, err := json.Marshal(at)
	if err == nil {
		ec.Resume.Save(raw)
	}
}

// foundResult is the result of a message found by the look-up, shaped as
// chat.postMessage's answer.
func foundResult(channel, ts string, message json.RawMessage) (*executors.Result, error) {
	data, err := json.Marshal(map[string]any{"ok": true, "channel": channel, "ts": ts, "message": message})
	if err != nil {
		return nil, fmt.Errorf("slack: encoding the found message: %w", err)
	}
	return &executors.Result{Data: data, ProviderRef: ts, Conflict: true}, nil
}

// lookupStart is the time before which no earlier attempt posted: the
// first attempt's start or, when unknown, the time in the idempotency key
// (an invocation id, a UUIDv7), less clockSkew; zero when neither is known.
func lookupStart(ec executors.ExecContext) time.Time {
	from := ec.FirstStartedAt
	if from.IsZero() {
		id, err := uuid.Parse(ec.IdempotencyKey)
		if err != nil || id.Version() != 7 {
			return time.Time{}
		}
		from = time.Unix(id.Time().UnixTime())
	}
	return from.Add(-clockSkew)
}

func unreconciled(ec executors.ExecContext, u executors.Unreconciled) {
	if ec.Unreconciled != nil {
		ec.Unreconciled(u)
	}
}
