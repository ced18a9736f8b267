package slackapproval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/relay"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval/slackapprovalstore"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/policy"
)

// Consumer is the relay consumer of Slack approvals: for organizations
// with a channel, a request makes a post job, a decision (approval
// result, or cancellation while pending) an update job.
func (s *Service) Consumer() relay.Consumer {
	return relay.Consumer{Name: "slack", Every: s.cfg.RelayInterval, Scope: s.scope, Jobs: s.jobs}
}

// scope: with a default channel every organization's requests are posted;
// otherwise only those of organizations with a channel of their own.
func (s *Service) scope(ctx context.Context, tx pgx.Tx) (invocation.FeedScope, error) {
	if s.cfg.Channel != "" {
		return invocation.FeedScope{All: true}, nil
	}
	orgs, err := s.work.ChannelOrganizations(ctx, tx)
	if err != nil {
		return invocation.FeedScope{}, fmt.Errorf("loading the organizations with a channel: %w", err)
	}
	return invocation.FeedScope{Orgs: orgs}, nil
}

// jobs returns the post and update jobs of the notices, every one of an
// organization with a channel (the scope).
func (s *Service) jobs(_ context.Context, _ pgx.Tx, items []invocation.FeedItem) ([]river.InsertManyParams, error) {
	var jobs []river.InsertManyParams
	for i := range items {
		it := &items[i]
		if !relevant(it) {
			continue
		}
		// Each message's job joins its invocation's trace, if traced.
		opts := &river.InsertOpts{Metadata: tracing.JobMetadata(it.Invocation.TraceContext)}
		if it.Notice == invocation.NoticeApprovalRequest {
			jobs = append(jobs, river.InsertManyParams{Args: PostArgs{InvocationID: it.InvocationID}, InsertOpts: opts})
		} else {
			jobs = append(jobs, river.InsertManyParams{Args: UpdateArgs{InvocationID: it.InvocationID}, InsertOpts: opts})
		}
	}
	return jobs, nil
}

// relevant reports whether an event changes an approval message.
func relevant(it *invocation.FeedItem) bool {
	return it.Notice == invocation.NoticeApprovalRequest || it.Notice == invocation.NoticeApprovalResult ||
		(it.Notice == invocation.NoticeCompleted && it.From == invocation.StatusPending)
}

// PostArgs posts the approval message of a pending invocation.
type PostArgs struct {
	InvocationID uuid.UUID `json:"invocation_id"`
}

// Kind implements river.JobArgs.
func (PostArgs) Kind() string { return "slack_post_approval" }

// InsertOpts allows a few attempts (Slack down, rate limited).
func (PostArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 8} }

// PostWorker runs PostArgs.
type PostWorker struct {
	river.WorkerDefaults[PostArgs]
	svc *Service
}

// Work posts the message, unless the invocation was decided already.
func (w *PostWorker) Work(ctx context.Context, job *river.Job[PostArgs]) error {
	s := w.svc
	inv, err := s.store.GetByID(ctx, s.deps.Owner, job.Args.InvocationID)
	if err != nil {
		return err
	}
	if inv.Status != invocation.StatusPending {
		return nil
	}
	channel, err := s.channel(ctx, inv.OrganizationID)
	if err != nil || channel == "" {
		return err
	}
	text, blocks := requestMessage(&inv)
	answer, err := s.call(ctx, inv.OrganizationID, "chat.postMessage", map[string]any{"channel": channel, "text": text, "blocks": blocks})
	s.count("post", err)
	if err != nil {
		return err
	}
	ts, _ := answer["ts"].(string)
	posted, _ := answer["channel"].(string)
	return s.work.InsertMessage(ctx, inv.OrganizationID, inv.ID, slackapprovalstore.Message{Channel: cmpOr(posted, channel), TS: ts})
}

func (s *Service) channel(ctx context.Context, org string) (string, error) {
	st, err := settingsOf(ctx, s.work, s.deps.Owner, org)
	if err != nil {
		return "", err
	}
	if st.Channel != nil {
		return *st.Channel, nil
	}
	return s.cfg.Channel, nil
}

// UpdateArgs shows a decided invocation's outcome in its message.
type UpdateArgs struct {
	InvocationID uuid.UUID `json:"invocation_id"`
}

// Kind implements river.JobArgs.
func (UpdateArgs) Kind() string { return "slack_update_approval" }

// InsertOpts allows a few attempts: the message may not be posted yet.
func (UpdateArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 8} }

// UpdateWorker runs UpdateArgs.
type UpdateWorker struct {
	river.WorkerDefaults[UpdateArgs]
	svc *Service
}

// Work rewrites the message without its buttons, saying who decided.
func (w *UpdateWorker) Work(ctx context.Context, job *river.Job[UpdateArgs]) error {
	s := w.svc
	msg, ok, err := s.work.Message(ctx, job.Args.InvocationID)
	if err != nil {
		return err
	}
	if !ok {
		if job.Attempt >= 3 {
			return nil // never posted (decided before the post, or no channel then)
		}
		return river.JobSnooze(time.Duration(job.Attempt) * time.Second)
	}
	inv, err := s.store.GetByID(ctx, s.deps.Owner, job.Args.InvocationID)
	if err != nil {
		return err
	}
	text, blocks := decidedMessage(&inv)
	_, err = s.call(ctx, inv.OrganizationID, "chat.update", map[string]any{"channel": msg.Channel, "ts": msg.TS, "text": text, "blocks": blocks})
	s.count("update", err)
	return err
}

// AddWorkers registers the post and update workers.
func (s *Service) AddWorkers(workers *river.Workers) {
	river.AddWorker(workers, &PostWorker{svc: s})
	river.AddWorker(workers, &UpdateWorker{svc: s})
}

// Queues: Slack jobs run on River's default queue.
func (s *Service) Queues() map[string]river.QueueConfig { return nil }

// PeriodicJobs: the relay (Consumer) runs Slack's periodic job.
func (s *Service) PeriodicJobs() []*river.PeriodicJob { return nil }

// buttonValue is what a button carries back: Slack signs the click, so the
// organization in it is as trustworthy as the message outboxd posted.
type buttonValue struct {
	Org string `json:"o"`
	ID  string `json:"i"`
}

func requestMessage(inv *invocation.Invocation) (string, []any) {
	value, _ := json.Marshal(buttonValue{Org: inv.OrganizationID, ID: inv.ID.String()})
	button := func(text, id, style string) map[string]any {
		b := map[string]any{"type": "button", "text": plain(text), "action_id": id, "value": string(value)}
		if style != "" {
			b["style"] = style
		}
		return b
	}
	text := fmt.Sprintf("Approval requested: %s.%s", inv.Integration, inv.Action)
	blocks := append(append(summary(inv, text), intentBlocks(inv)...), map[string]any{"type": "actions", "block_id": "outboxd_approval", "elements": []any{
		button("Approve", "approve", "primary"), button("Approve & always allow", "approve_always", ""), button("Deny", "deny", "danger"),
	}})
	return text, blocks
}

func decidedMessage(inv *invocation.Invocation) (string, []any) {
	var outcome string
	switch inv.Status {
	case invocation.StatusDenied:
		outcome = fmt.Sprintf("Denied by %s", deref(inv.ApprovedBy, "policy"))
		if inv.Error != nil {
			outcome += ": " + *inv.Error
		}
	case invocation.StatusExpired:
		outcome = "Expired: nobody decided in time"
	case invocation.StatusCancelled:
		outcome = "Cancelled before anyone decided"
	case invocation.StatusPending:
		outcome = "Waiting for approval"
	default:
		outcome = fmt.Sprintf("Approved by %s", deref(inv.ApprovedBy, "someone"))
	}
	text := fmt.Sprintf("%s.%s — %s", inv.Integration, inv.Action, outcome)
	blocks := append(summary(inv, fmt.Sprintf("%s.%s", inv.Integration, inv.Action)),
		map[string]any{"type": "section", "text": mrkdwn("*" + outcome + "*")})
	return text, blocks
}

// summary says who asked for what: the action, its risk, the redacted
// params and when the request expires.
func summary(inv *invocation.Invocation, title string) []any {
	who := "session " + deref(inv.SessionID, "?")
	if inv.AutomationID != nil {
		who = "automation " + *inv.AutomationID
	}
	params := string(inv.Params)
	if len(params) > 2500 {
		params = params[:2500] + "…"
	}
	expires := "never"
	if inv.ExpiresAt != nil {
		expires = inv.ExpiresAt.UTC().Format(time.RFC3339)
	}
	tier := policy.TierOf(inv.RiskLevel)
	return []any{
		map[string]any{"type": "header", "text": plain(title)},
		map[string]any{"type": "section", "fields": []any{
			mrkdwn("*Requested by*\n" + who + " (" + inv.RequestedBy + ")"),
			mrkdwn("*Action*\n`" + inv.Integration + "." + inv.Action + "`"),
			mrkdwn("*Risk*\n" + string(tier) + " (" + tier.Risk() + ")"),
			mrkdwn("*Expires*\n" + expires),
		}},
		map[string]any{"type": "section", "text": mrkdwn("*Params*\n```" + params + "```")},
	}
}

func plain(s string) map[string]any  { return map[string]any{"type": "plain_text", "text": s} }
func mrkdwn(s string) map[string]any { return map[string]any{"type": "mrkdwn", "text": s} }

func deref(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
