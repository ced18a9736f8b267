package slack

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

//go:embed send_message.schema.json
var sendMessageSchema string

const sendMessageDescription = "Post a message to a Slack channel, private channel or direct message " +
	"as the workspace's Slack app. Set `channel` to a channel ID such as C0123456789 (preferred) or a " +
	"name such as #general; the app must be a member of the channel. Write `text` in Slack mrkdwn. " +
	"To reply in a thread, set `thread_ts` to the ts of the parent message. Every invocation posts one " +
	"message, which cannot be undone: when an answer is lost, outboxd finds the message it already posted " +
	"in the channel's history rather than posting again, which needs a channel ID. On success the provider " +
	"reference is the message's ts, usable as `thread_ts` for follow-up replies."

const (
	// maxResponseBytes bounds how much of Slack's answer is read. A
	// chat.postMessage answer echoes the message, whose text is capped at
	// 40,000 characters, so 1 MiB leaves ample room.
	maxResponseBytes = 1 << 20

	// defaultRetryAfter is used when Slack rate-limits without a usable
	// Retry-After header.
	defaultRetryAfter = 30 * time.Second

	// maxRetryAfter caps a Retry-After header, so a bogus value cannot park
	// an invocation for days.
	maxRetryAfter = time.Hour
)

// slackErrorCode matches the snake_case error codes Slack returns. Anything
// else is not trusted into Error.Code.
var slackErrorCode = regexp.MustCompile(`^[a-z0-9_]{1,100}$`)

// slackScopes matches the comma-separated OAuth scopes Slack names in a
// missing_scope answer, such as "chat:write,chat:write.public".
var slackScopes = regexp.MustCompile(`^[a-z0-9_:.,]{1,200}$`)

// retryableSlackErrors are the ok:false codes that describe a passing
// problem on Slack's side rather than something wrong with the call.
var retryableSlackErrors = map[string]bool{
	"ratelimited":         true,
	"internal_error":      true,
	"fatal_error":         true,
	"service_unavailable": true,
	"request_timeout":     true,
}

// slackErrorMessages explains the common ok:false codes in terms an agent
// or operator can act on. Codes not listed get a generic message.
var slackErrorMessages = map[string]string{
	"invalid_auth":        "the Slack token is invalid; reconnect Slack",
	"not_authed":          "no Slack token was sent; connect Slack first",
	"token_revoked":       "the Slack token has been revoked; reconnect Slack",
	"token_expired":       "the Slack token has expired; reconnect Slack",
	"account_inactive":    "the Slack account behind the token is deactivated",
	"missing_scope":       "the Slack app lacks an OAuth scope this call needs",
	"channel_not_found":   "the channel does not exist or the Slack app cannot see it; check the channel ID",
	"not_in_channel":      "the Slack app is not a member of the channel; invite it first",
	"is_archived":         "the channel is archived",
	"msg_too_long":        "the message text is too long",
	"no_text":             "the message has no text",
	"restricted_action":   "a workspace setting prevents the Slack app from posting in this channel",
	"ratelimited":         "Slack rate-limited the call",
	"internal_error":      "Slack had an internal error",
	"fatal_error":         "Slack had a fatal server error",
	"service_unavailable": "Slack is temporarily unavailable",
	"request_timeout":     "Slack timed out reading the request",
}

// SendMessageParams are the params of send_message. They mirror the action's
// JSON Schema and are also the body sent to chat.postMessage.
type SendMessageParams struct {
	// Channel is a channel, private channel or DM ID, or a channel name.
	Channel string `json:"channel"`
	// Text is the message in Slack mrkdwn.
	Text string `json:"text"`
	// ThreadTS, when set, makes the message a reply in that thread.
	ThreadTS string `json:"thread_ts,omitempty"`
}

// Check checks the params the schema requires.
func (p *SendMessageParams) Check() error {
	switch {
	case p.Channel == "":
		return errors.New("channel is required")
	case p.Text == "":
		return errors.New("text is required")
	}
	return nil
}

// sendMessageDefinition is send_message's definition.
var sendMessageDefinition = executors.Definition{
	ID:          ActionSendMessage,
	Description: sendMessageDescription,
	Tier:        executors.TierR2,
	Params:      json.RawMessage(sendMessageSchema),
	Recipients:  []string{"channel"},
	Delivery:    executors.DeliveryReconciled,
}

// metadataEventType is the event_type of the metadata every message
// outboxd posts carries: its event_payload holds the invocation's
// idempotency key, by which a retry finds the message.
const metadataEventType = "outboxd_action"

// messageMetadata is chat.postMessage's metadata argument, and the part of
// a message's metadata the look-up reads.
type messageMetadata struct {
	EventType    string          `json:"event_type"`
	EventPayload metadataPayload `json:"event_payload"`
}

type metadataPayload struct {
	IdempotencyKey string `json:"idempotency_key"`
}

// postMessageBody is the body sent to chat.postMessage.
type postMessageBody struct {
	*SendMessageParams
	Metadata *messageMetadata `json:"metadata,omitempty"`
}

// postMessageAnswer is the part of a Web API answer that drives
// classification. OK is a pointer so a body without it is told apart from
// ok:false.
type postMessageAnswer struct {
	OK     *bool  `json:"ok"`
	Error  string `json:"error"`
	TS     string `json:"ts"`
	Needed string `json:"needed"`
}

// sendMessage posts p with chat.postMessage, its metadata carrying the
// idempotency key. On a retry it first looks for the message an earlier
// attempt posted (findPosted) and completes with it when found.
func (s *client) sendMessage(ctx context.Context, p *SendMessageParams, ec executors.ExecContext) (executors.Result, error) {
	if ec.Token == "" {
		return executors.Result{}, &executors.Error{
			Code:    "not_authed",
			Message: "no Slack token is available; connect Slack first",
		}
	}
	// Whether an earlier execution may have posted unseen: on a retry,
	// until a look-up found no post of it.
	unseen := ec.Retry
	if ec.Retry && ec.IdempotencyKey != "" {
		found, looked, err := s.findPosted(ctx, p, ec)
		if err != nil || found != nil {
			return deref(found), err
		}
		unseen = !looked
	}

	post := postMessageBody{SendMessageParams: p}
	if ec.IdempotencyKey != "" {
		post.Metadata = &messageMetadata{EventType: metadataEventType, EventPayload: metadataPayload{IdempotencyKey: ec.IdempotencyKey}}
	}
	body, err := json.Marshal(post)
	if err != nil {
		return executors.Result{}, fmt.Errorf("slack: encoding chat.postMessage body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.baseURL+"/chat.postMessage", bytes.NewReader(body))
	if err != nil {
		return executors.Result{}, fmt.Errorf("slack: building chat.postMessage request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if ec.IdempotencyKey != "" {
		// Slack ignores the key; the metadata is what a retry looks for.
		req.Header.Set(httpsource.IdempotencyKeyHeader, ec.IdempotencyKey)
	}
	raw, answer, err := s.call(ctx, ec, req)
	var limited *executors.Error
	if errors.As(err, &limited) && limited.Code == "ratelimited" && !unseen {
		// Slack refuses a rate-limited request without processing it, and
		// any earlier attempt's message was looked for above and not
		// found: the next try posts without looking, so rate-limited posts
		// do not queue behind the look-up's own limit (one a minute for an
		// app outside the Slack Marketplace). When the look-up could not
		// be made (a token without the history scope, a channel given by
		// name), an earlier attempt may have posted: the next try looks
		// again, and finds it once the look-up can be made (the scope
		// granted meanwhile).
		limited.NotDone = true
	}
	if err != nil {
		return executors.Result{}, err
	}
	return executors.Result{Data: json.RawMessage(raw), ProviderRef: answer.TS}, nil
}

func deref[T any](p *T) T {
	if p == nil {
		return *new(T)
	}
	return *p
}

// call sends req with ec's token and reads Slack's answer: the raw body of
// an ok:true answer with its classification fields, or a classified
// failure.
func (s *client) call(ctx context.Context, ec executors.ExecContext, req *http.Request) ([]byte, postMessageAnswer, error) {
	var answer postMessageAnswer
	req.Header.Set("Authorization", "Bearer "+ec.Token)
	req.Header.Set("Accept", "application/json")

	resp, err := s.http.Do(req)
	if err != nil {
		return nil, answer, httpsource.TransportError(ctx, "Slack", err)
	}
	defer httpsource.CloseBody(resp.Body, maxResponseBytes)

	raw, readErr := httpsource.ReadBody(resp.Body, maxResponseBytes)

	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, answer, &executors.Error{
			Code:       "ratelimited",
			Message:    "Slack rate-limited the call (HTTP 429)",
			Retryable:  true,
			RetryAfter: httpsource.RetryAfter(resp.Header, defaultRetryAfter, maxRetryAfter),
		}
	case resp.StatusCode >= 500:
		return nil, answer, httpStatusError(resp, raw, true)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, answer, httpStatusError(resp, raw, false)
	}

	if errors.Is(readErr, httpsource.ErrTooLarge) {
		return nil, answer, &executors.Error{
			Code:      "invalid_response",
			Message:   fmt.Sprintf("Slack's answer is larger than %d bytes", maxResponseBytes),
			Retryable: true,
		}
	}
	if readErr != nil {
		return nil, answer, httpsource.TransportError(ctx, "Slack", readErr)
	}

	if err := json.Unmarshal(raw, &answer); err != nil || answer.OK == nil {
		return nil, answer, &executors.Error{
			Code:      "invalid_response",
			Message:   fmt.Sprintf("Slack answered HTTP %d with a body that is not a Web API response", resp.StatusCode),
			Retryable: true,
		}
	}
	if !*answer.OK {
		return nil, answer, slackError(answer, resp.Header)
	}
	return raw, answer, nil
}

// slackError classifies a Web API ok:false answer.
func slackError(answer postMessageAnswer, header http.Header) *executors.Error {
	code := answer.Error
	if !slackErrorCode.MatchString(code) {
		return &executors.Error{
			Code:    "unknown_error",
			Message: "Slack rejected the message without a recognisable error code",
		}
	}

	msg, ok := slackErrorMessages[code]
	if !ok {
		msg = "Slack rejected the message with error " + code
	}
	if code == "missing_scope" && slackScopes.MatchString(answer.Needed) {
		msg += " (needs " + answer.Needed + ")"
	}

	e := &executors.Error{Code: code, Message: msg, Retryable: retryableSlackErrors[code]}
	if code == "token_expired" {
		// Slack's word for an expired token (token rotation) comes with HTTP
		// 200. As unauthorized it has the worker fetch a fresh token and
		// try once more, as a 401 does elsewhere, instead of failing.
		e.Code, e.Message = executors.CodeUnauthorized, msg+" (token_expired)"
	}
	if code == "ratelimited" {
		e.RetryAfter = httpsource.RetryAfter(header, defaultRetryAfter, maxRetryAfter)
	}
	return e
}

// httpStatusError classifies a non-2xx answer other than 429. Slack's error
// code, when the body carries one, is added to the message for operators.
func httpStatusError(resp *http.Response, raw []byte, retryable bool) *executors.Error {
	msg := fmt.Sprintf("Slack answered HTTP %d", resp.StatusCode)
	var answer postMessageAnswer
	if json.Unmarshal(raw, &answer) == nil && slackErrorCode.MatchString(answer.Error) {
		msg += " (" + answer.Error + ")"
	}
	e := &executors.Error{
		Code:      fmt.Sprintf("http_%d", resp.StatusCode),
		Message:   msg,
		Retryable: retryable,
	}
	if retryable {
		e.RetryAfter = httpsource.RetryAfter(resp.Header, 0, maxRetryAfter)
	}
	return e
}
