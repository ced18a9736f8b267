package slackapproval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// DefaultDenyReason is what the agent is told of a denial in Slack whose
// approver gave no reason.
const DefaultDenyReason = "denied in Slack"

// MaxDenyReason bounds a reason typed in Slack as the API bounds one
// (POST /v1/invocations/{id}/deny).
const MaxDenyReason = 2000

// The deny form: its callback_id, and the block and action ids of its
// reason input.
const (
	denyCallback = "outboxd_deny"
	reasonBlock  = "reason"
	reasonAction = "reason"
)

// openTimeout bounds views.open: Slack wants the click answered within 3 s,
// and its trigger_id expires as soon.
const openTimeout = 2 * time.Second

// denyForm answers a Deny click: a mapped approver of a pending invocation
// gets a modal asking the reason (views.open with the click's trigger_id,
// the organization's bot token); the submission denies (submitted). When
// Slack cannot open it, the invocation is denied at once with
// DefaultDenyReason and the approver is told so: a Deny never does nothing.
// It returns what to tell the user alone.
func (c *Clicks) denyForm(ctx context.Context, v buttonValue, slackUser, trigger string) (string, error) {
	if _, ok, err := c.approver(ctx, v, slackUser); err != nil || !ok {
		if err != nil {
			return "", err
		}
		return notApprover, nil
	}
	inv, err := c.decider.Get(ctx, v.Org, v.ID, everySource)
	switch {
	case errors.Is(err, errs.NotFound):
		return "This invocation no longer exists.", nil
	case err != nil:
		return "", err
	case inv.Status == invocation.StatusExpired:
		return "Too late: the approval window closed.", nil
	case inv.Status != invocation.StatusPending:
		return decidedAlready(&inv), nil
	}
	err = errors.New("the click carried no trigger_id")
	if trigger != "" {
		openCtx, cancel := context.WithTimeout(ctx, openTimeout)
		_, err = c.s.call(openCtx, v.Org, "views.open", map[string]any{"trigger_id": trigger, "view": denyView(&inv, v)})
		cancel()
		c.s.count("modal", err)
		if err == nil {
			return "", nil
		}
	}
	c.s.logger.WarnContext(ctx, "slack deny form", "organization_id", v.Org, "invocation_id", v.ID, "error", err)
	msg, err2 := c.decide(ctx, v, slackUser, "deny", "")
	if err2 != nil || msg != "" {
		return msg, err2
	}
	return fmt.Sprintf("Slack could not open the form asking why (%v), so this was denied at once with the reason %q.", err, DefaultDenyReason), nil
}

// denyView is the modal asking why: its private_metadata is the button's
// value, which comes back in the signed view_submission (only this app
// opens its views), as trustworthy as the click.
func denyView(inv *invocation.Invocation, v buttonValue) map[string]any {
	meta, _ := json.Marshal(v)
	return map[string]any{
		"type":             "modal",
		"callback_id":      denyCallback,
		"private_metadata": string(meta),
		"title":            plain("Deny request"),
		"submit":           plain("Deny"),
		"close":            plain("Cancel"),
		"blocks": []any{
			map[string]any{"type": "section", "text": mrkdwn(fmt.Sprintf("Deny `%s.%s`? The agent is told the reason you give.", inv.Integration, inv.Action))},
			map[string]any{
				"type": "input", "block_id": reasonBlock, "optional": true,
				"label": plain("Reason for the agent"),
				"hint":  plain(fmt.Sprintf("Optional; without one the agent reads %q.", DefaultDenyReason)),
				"element": map[string]any{
					"type": "plain_text_input", "action_id": reasonAction, "multiline": true, "max_length": MaxDenyReason,
					"placeholder": plain("Why not, and what to do instead"),
				},
			},
		},
	}
}

// submitted takes the deny form's view_submission: the same checks as a
// click (the signature, verified already; a mapped admin or owner; the
// decider's approver group and self-approval), then the denial with the
// typed reason. Slack reads the answer: empty closes the modal; a too
// long reason is a field error (response_action errors); a refusal
// replaces the form with what happened (response_action update).
func (c *Clicks) submitted(w http.ResponseWriter, r *http.Request, in *interaction) {
	s := c.s
	var v buttonValue
	if in.View.CallbackID != denyCallback || json.Unmarshal([]byte(in.View.PrivateMetadata), &v) != nil || v.Org == "" || v.ID == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "the view is not an outboxd deny form")
		return
	}
	var reason string
	if field, ok := in.View.State.Values[reasonBlock][reasonAction]; ok && field.Value != nil {
		reason = strings.TrimSpace(*field.Value)
	}
	// Characters, as Slack's max_length counts them, not bytes.
	if n := utf8.RuneCountInString(reason); n > MaxDenyReason {
		writeViewAnswer(w, map[string]any{"response_action": "errors", "errors": map[string]string{
			reasonBlock: fmt.Sprintf("At most %d characters, please (this one has %d).", MaxDenyReason, n),
		}})
		return
	}
	ctx := dbutil.WithOrg(r.Context(), v.Org)
	msg, err := c.decide(ctx, v, in.User.ID, "deny", reason)
	s.count("click", err)
	if err != nil {
		s.logger.ErrorContext(ctx, "slack deny form", "organization_id", v.Org, "invocation_id", v.ID, "error", err)
		msg = "Something went wrong; try again or decide in outboxd."
	}
	if msg == "" {
		w.WriteHeader(http.StatusOK)
		return
	}
	writeViewAnswer(w, map[string]any{"response_action": "update", "view": map[string]any{
		"type": "modal", "title": plain("Deny request"), "close": plain("Close"),
		"blocks": []any{map[string]any{"type": "section", "text": mrkdwn(msg)}},
	}})
}

// decidedAlready tells who decided an invocation that is no longer pending.
func decidedAlready(inv *invocation.Invocation) string {
	return fmt.Sprintf("Already %s by %s.", inv.Status, deref(inv.ApprovedBy, "someone else"))
}

func writeViewAnswer(w http.ResponseWriter, answer map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(answer)
}
