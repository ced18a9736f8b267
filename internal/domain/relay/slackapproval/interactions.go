package slackapproval

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/netguard"
	"github.com/outboxd/outboxd/outbox"
)

// maxSkew is how old (or early) a signed request may be: an older one is a
// replay.
const maxSkew = 5 * time.Minute

// Verify checks Slack's request signature: X-Slack-Signature is "v0=" and
// the hex HMAC-SHA256 of "v0:<X-Slack-Request-Timestamp>:<body>" with the
// signing secret, and the timestamp is within five minutes of now.
func Verify(secret string, header http.Header, body []byte, now time.Time) error {
	tsHeader := header.Get("X-Slack-Request-Timestamp")
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return errors.New("missing or invalid X-Slack-Request-Timestamp")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > maxSkew || d < -maxSkew {
		return errors.New("the request timestamp is more than five minutes away")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", tsHeader)
	mac.Write(body)
	want := "v0=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(header.Get("X-Slack-Signature"))) {
		return errors.New("the signature does not match")
	}
	return nil
}

// Sign returns the X-Slack-Signature of body at ts, as Slack computes it
// (for tests and tools).
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:", ts)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// interaction is the part of Slack's block_actions and view_submission
// payloads outboxd reads.
type interaction struct {
	Type string `json:"type"`
	User struct {
		ID string `json:"id"`
	} `json:"user"`
	Actions []struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	} `json:"actions"`
	// Container is the message (or view) whose button was clicked.
	Container struct {
		Type      string `json:"type"`
		ChannelID string `json:"channel_id"`
		MessageTS string `json:"message_ts"`
	} `json:"container"`
	ResponseURL string `json:"response_url"`
	// TriggerID lets a click open a modal (views.open), within 3 s.
	TriggerID string `json:"trigger_id"`
	// View is the submitted modal (view_submission).
	View struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
		State           struct {
			Values map[string]map[string]struct {
				Value *string `json:"value"`
			} `json:"values"`
		} `json:"state"`
	} `json:"view"`
}

// Clicks takes Slack's clicks on approval messages (POST
// /v1/slack/interactions) and decides through the outbox.
type Clicks struct {
	s       *Service
	decider Decider
}

// Clicks returns the handler of Slack's clicks on s's messages, deciding
// through decider (the outbox).
func (s *Service) Clicks(decider Decider) *Clicks {
	return &Clicks{s: s, decider: decider}
}

// ServeHTTP is POST /v1/slack/interactions: a verified click of a mapped
// admin or owner approves through the same transition as the API, or, for
// Deny, opens the form asking why, whose verified submission denies;
// anything else changes nothing. Refusals go back to the clicking
// user only (an ephemeral message on response_url); the message itself is
// updated by the relay once the decision is committed.
func (c *Clicks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := c.s
	if s.cfg.SigningSecret == "" {
		writeError(w, http.StatusNotFound, "not_found", "Slack interactivity is not configured (notifications.slack.signing_secret)")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "request body too large")
		return
	}
	if err := Verify(s.cfg.SigningSecret, r.Header, body, time.Now()); err != nil {
		s.count("click", err)
		writeError(w, http.StatusUnauthorized, "unauthorized", "invalid Slack signature: "+err.Error())
		return
	}
	form, err := url.ParseQuery(string(body))
	var in interaction
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &in)
	}
	if err == nil && in.Type == "view_submission" {
		c.submitted(w, r, &in)
		return
	}
	if err != nil || in.Type != "block_actions" || len(in.Actions) != 1 {
		writeError(w, http.StatusBadRequest, "invalid_request", "expected a block_actions payload with one action, or a view_submission of the deny form")
		return
	}
	var v buttonValue
	if json.Unmarshal([]byte(in.Actions[0].Value), &v) != nil || v.Org == "" || v.ID == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "the action is not an outboxd approval button")
		return
	}
	ctx := dbutil.WithOrg(r.Context(), v.Org)
	var msg string
	posted, err := c.fromItsMessage(ctx, v, &in)
	switch {
	case err != nil:
	case !posted:
		msg = notItsMessage
	case in.Actions[0].ActionID == "deny":
		// Deny asks why first, in a modal; the submission denies.
		msg, err = c.denyForm(ctx, v, in.User.ID, in.TriggerID)
	default:
		msg, err = c.decide(ctx, v, in.User.ID, in.Actions[0].ActionID, "")
	}
	s.count("click", err)
	if err != nil {
		s.logger.ErrorContext(ctx, "slack click", "organization_id", v.Org, "invocation_id", v.ID, "error", err)
		msg = "Something went wrong; try again or decide in outboxd."
	}
	if msg != "" {
		s.respond(context.WithoutCancel(ctx), in.ResponseURL, msg)
	}
	w.WriteHeader(http.StatusOK)
}

// notApprover is the refusal of a Slack user who is not mapped to an
// outboxd admin or owner.
const notApprover = "You are not an outboxd approver for this organization; nothing was changed."

// notItsMessage is the refusal of a click on a button outboxd did not
// post for the invocation it names.
const notItsMessage = "This button is not on the current approval message of that request; nothing was changed. Decide in the latest approval message, or in outboxd."

// fromItsMessage reports whether the click came from the approval message
// outboxd posted, and still keeps, for v's invocation. Slack signs every
// click on any message of the app with the one signing secret, whoever
// posted it with the app's token (another organization using the same app,
// an integration sharing its token, a Home tab view), so the button's
// value alone does not say which invocation the approver saw.
func (c *Clicks) fromItsMessage(ctx context.Context, v buttonValue, in *interaction) (bool, error) {
	id, err := uuid.Parse(v.ID)
	if err != nil {
		return false, nil
	}
	// On the API's pool as v.Org: another organization's message is none.
	msg, ok, err := c.s.api.Message(ctx, id)
	if err != nil || !ok {
		return false, err
	}
	return in.Container.Type == "message" && in.Container.ChannelID == msg.Channel && in.Container.MessageTS == msg.TS, nil
}

// approver is who slackUser decides as in v's organization; false when
// nobody (not mapped, or mapped to a role that does not approve).
func (c *Clicks) approver(ctx context.Context, v buttonValue, slackUser string) (Approver, bool, error) {
	st, err := c.s.Get(ctx, v.Org)
	if err != nil {
		return Approver{}, false, err
	}
	approver, ok := st.Approvers[slackUser]
	return approver, ok && (approver.Role == "admin" || approver.Role == "owner"), nil
}

// decide runs the click (or, with action deny, the deny form's submission
// with its reason) and returns what to tell the user alone ("" when the
// updated message says it).
func (c *Clicks) decide(ctx context.Context, v buttonValue, slackUser, action, reason string) (string, error) {
	approver, ok, err := c.approver(ctx, v, slackUser)
	if err != nil {
		return "", err
	}
	if !ok {
		return notApprover, nil
	}
	// The audit trail names the outboxd user the Slack user maps to.
	ctx = audit.WithActor(ctx, audit.Actor{Subject: approver.UserID, Kind: "slack", Role: approver.Role, ClientAddr: "slack:" + slackUser})
	switch action {
	case "approve", "approve_always":
		_, err = c.decider.Approve(ctx, &outbox.ApproveParams{OrganizationID: v.Org, InvocationID: v.ID, UserID: approver.UserID, Role: approver.Role,
			Always: action == "approve_always", Digest: v.Digest})
	case "deny":
		_, err = c.decider.Deny(ctx, &outbox.DenyParams{OrganizationID: v.Org, InvocationID: v.ID, UserID: approver.UserID, Role: approver.Role, Reason: cmpOr(reason, DefaultDenyReason)})
	default:
		return "Unknown action; nothing was changed.", nil
	}
	var invalid *errs.ValidationError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &invalid):
		// Refused as the API refuses it (400): say why, as the API does;
		// Approve & always allow of an approval that does not release the
		// invocation is one.
		return "Not done: " + invalid.Message + ". Nothing was changed.", nil
	case errors.Is(err, errs.NotApprover):
		return "You are not in this request's approver group; nothing was changed.", nil
	case errors.Is(err, errs.AlreadyApproved):
		return "You approved this already; it waits for another approver.", nil
	case errors.Is(err, errs.SelfApproval):
		return "You asked for this yourself: another person must approve it.", nil
	case errors.Is(err, errs.Expired):
		return "Too late: the approval window closed.", nil
	case errors.Is(err, errs.Conflict):
		inv, gerr := c.decider.Get(ctx, v.Org, v.ID, everySource)
		if gerr != nil {
			return "", gerr
		}
		if inv.Status == invocation.StatusPending {
			// Still undecided: its intent is not the one this message shows.
			return "Not done: this request changed since this message was posted (edited, or asked again): review it in outboxd. Nothing was changed.", nil
		}
		return decidedAlready(&inv), nil
	case errors.Is(err, errs.NotFound):
		return "This invocation no longer exists.", nil
	}
	return "", err
}

// respond sends an ephemeral message to the clicking user.
func (s *Service) respond(ctx context.Context, responseURL, text string) {
	if responseURL == "" {
		return
	}
	raw, _ := json.Marshal(map[string]any{"response_type": "ephemeral", "replace_original": false, "text": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(raw))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		// The error quotes the URL, a capability of the click's own.
		s.logger.WarnContext(ctx, "slack response_url", "error", netguard.RequestError(err))
		return
	}
	resp.Body.Close()
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
