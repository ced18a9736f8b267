package slackapproval

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/fairness"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/preview"
	"github.com/outboxd/outboxd/internal/domain/preview/previewstore"
	"github.com/outboxd/outboxd/internal/domain/relay"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval/slackapprovalstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/policy"
)

// Consumer is the relay consumer of Slack approvals: for organizations
// with a channel, a request makes a post job, a decision (approval
// result, or cancellation before the start: relevant) an update job.
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
	if s.deps.Approvals != nil {
		// And those whose approver groups have channels of their own.
		more, err := s.deps.Approvals.ChannelOrganizations(ctx, tx)
		if err != nil {
			return invocation.FeedScope{}, fmt.Errorf("loading the organizations with a group channel: %w", err)
		}
		for _, o := range more {
			if !slices.Contains(orgs, o) {
				orgs = append(orgs, o)
			}
		}
	}
	return invocation.FeedScope{Orgs: orgs}, nil
}

// jobs returns the post and update jobs of the notices, every one of an
// organization with a channel (the scope).
func (s *Service) jobs(_ context.Context, _ pgx.Tx, items []invocation.FeedItem) ([]river.InsertManyParams, error) {
	var jobs []river.InsertManyParams
	now := time.Now()
	for i := range items {
		it := &items[i]
		if !relevant(it) {
			continue
		}
		// Each message's job joins its invocation's trace, if traced.
		opts := &river.InsertOpts{Metadata: tracing.JobMetadata(it.Invocation.TraceContext)}
		if behind, _ := s.deps.Fair.Behind(it.Invocation.OrganizationID, now); behind {
			opts.Priority = fairness.PriorityBehind
		}
		if it.Notice == invocation.NoticeApprovalRequest {
			jobs = append(jobs, river.InsertManyParams{Args: PostArgs{InvocationID: it.InvocationID}, InsertOpts: opts})
		} else {
			jobs = append(jobs, river.InsertManyParams{Args: UpdateArgs{InvocationID: it.InvocationID}, InsertOpts: opts})
		}
	}
	return jobs, nil
}

// relevant reports whether an event changes an approval message: a
// request, its result, and a cancellation before the start, of a request
// (pending) or of one a human approved (approved, approved_by set: its
// message says "Approved by …"; an admin's or the agent's cancel, a
// revocation's withdrawal). The other ends of an approved invocation
// (completed, failed, skipped) are its execution's, which the message does
// not show.
func relevant(it *invocation.FeedItem) bool {
	switch it.Notice {
	case invocation.NoticeApprovalRequest, invocation.NoticeApprovalResult:
		return true
	case invocation.NoticeCompleted:
		return it.Type == invocation.EventCancelled && (it.From == invocation.StatusPending || it.Invocation.ApprovedBy != nil)
	}
	return false
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
	progress, err := s.progress(ctx, s.deps.Owner, &inv)
	if err != nil {
		return err
	}
	channel, err := s.channel(ctx, inv.OrganizationID, progress)
	if err != nil || channel == "" {
		return err
	}
	rec, err := s.preview(ctx, &inv)
	if err != nil {
		return err
	}
	text, blocks := requestMessage(&inv, progress, rec)
	answer, err := s.call(ctx, inv.OrganizationID, "chat.postMessage", map[string]any{"channel": channel, "text": text, "blocks": blocks})
	s.count("post", err)
	if err != nil {
		return err
	}
	ts, _ := answer["ts"].(string)
	posted, _ := answer["channel"].(string)
	msg := slackapprovalstore.Message{Channel: cmpOr(posted, channel), TS: ts}
	if err := s.work.InsertMessage(ctx, inv.OrganizationID, inv.ID, msg); err != nil || rec != nil {
		return err
	}
	// The preview job stored its rendering while the message was posted,
	// and found no message to update: this job updates it.
	if rec, err = s.preview(ctx, &inv); err != nil || rec == nil {
		return err
	}
	text, blocks = requestMessage(&inv, progress, rec)
	_, err = s.call(ctx, inv.OrganizationID, "chat.update", map[string]any{"channel": msg.Channel, "ts": msg.TS, "text": text, "blocks": blocks})
	s.count("update", err)
	return err
}

// preview returns the invocation's stored preview, nil while none is.
func (s *Service) preview(ctx context.Context, inv *invocation.Invocation) (*preview.Record, error) {
	rec, ok, err := previewstore.New().Get(ctx, s.deps.Owner, inv.OrganizationID, inv.ID)
	if err != nil || !ok {
		return nil, err
	}
	return &rec, nil
}

// progress is where inv's approvals stand, read on db; nil without
// approver groups.
func (s *Service) progress(ctx context.Context, db dbutil.DB, inv *invocation.Invocation) (*approvers.Progress, error) {
	if s.deps.Approvals == nil {
		return nil, nil
	}
	return s.deps.Approvals.ProgressOf(ctx, db, inv)
}

// channel is where a request goes: its approver group's channel, else the
// organization's, else notifications.slack.channel.
func (s *Service) channel(ctx context.Context, org string, progress *approvers.Progress) (string, error) {
	if progress != nil && progress.Group != nil && progress.Group.SlackChannel != nil {
		return *progress.Group.SlackChannel, nil
	}
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

// Work rewrites the message without its buttons, saying who decided; a
// pending invocation's keeps them and says who approved so far.
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
	var cancel *invocation.Event
	if inv.Status == invocation.StatusCancelled {
		if cancel, err = s.cancelEvent(ctx, &inv); err != nil {
			return err
		}
	}
	text, blocks := decidedMessage(&inv, cancel)
	if inv.Status == invocation.StatusPending {
		// Still pending: who approved so far, or its preview is ready
		// (the preview job asked).
		progress, err := s.progress(ctx, s.deps.Owner, &inv)
		if err != nil {
			return err
		}
		rec, err := s.preview(ctx, &inv)
		if err != nil {
			return err
		}
		text, blocks = requestMessage(&inv, progress, rec)
	}
	_, err = s.call(ctx, inv.OrganizationID, "chat.update", map[string]any{"channel": msg.Channel, "ts": msg.TS, "text": text, "blocks": blocks})
	s.count("update", err)
	return err
}

// cancelEvent is a cancelled invocation's cancelled event (who cancelled
// it and why: a revocation's withdrawal says so); nil if none is found.
func (s *Service) cancelEvent(ctx context.Context, inv *invocation.Invocation) (*invocation.Event, error) {
	events, err := s.store.Events(ctx, s.deps.Owner, inv.OrganizationID, inv.ID)
	if err != nil {
		return nil, err
	}
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == invocation.EventCancelled {
			return &events[i], nil
		}
	}
	return nil, nil
}

// QueueUpdate returns the hook (approvers.Deps.Progressed) that queues,
// with client in the approval's transaction, the update of an invocation's
// message after an approval that leaves it pending: the message then says
// who approved so far. Nothing is queued when no message was posted.
func (s *Service) QueueUpdate(client *river.Client[pgx.Tx]) func(ctx context.Context, tx pgx.Tx, inv *invocation.Invocation) error {
	return func(ctx context.Context, tx pgx.Tx, inv *invocation.Invocation) error {
		if _, ok, err := s.api.MessageIn(ctx, tx, inv.ID); err != nil || !ok {
			return err
		}
		_, err := client.InsertTx(ctx, tx, UpdateArgs{InvocationID: inv.ID}, &river.InsertOpts{Metadata: tracing.JobMetadata(inv.TraceContext)})
		return err
	}
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
	// Digest is the intent digest of the request the message shows: an
	// approval is refused once the intent is another (an edit in the
	// console, a request asked again), so it binds what the approver saw.
	Digest string `json:"d,omitempty"`
}

func requestMessage(inv *invocation.Invocation, progress *approvers.Progress, rec *preview.Record) (string, []any) {
	value, _ := json.Marshal(buttonValue{Org: inv.OrganizationID, ID: inv.ID.String(), Digest: inv.IntentDigest})
	button := func(text, id, style string) map[string]any {
		b := map[string]any{"type": "button", "text": plain(text), "action_id": id, "value": string(value)}
		if style != "" {
			b["style"] = style
		}
		return b
	}
	text := fmt.Sprintf("Approval requested: %s.%s", inv.Integration, inv.Action)
	blocks := append(summary(inv, text, rec), intentBlocks(inv)...)
	if line := progressLine(progress); line != "" {
		text += " — " + line
		blocks = append(blocks, map[string]any{"type": "section", "text": mrkdwn("*" + line + "*")})
	}
	always := button("Approve & always allow", "approve_always", "")
	always["confirm"] = alwaysConfirm(inv)
	blocks = append(blocks, map[string]any{"type": "actions", "block_id": "outboxd_approval", "elements": []any{
		button("Approve", "approve", "primary"), always, button("Deny", "deny", "danger"),
	}})
	return text, blocks
}

// alwaysConfirm is the dialog Slack shows before "Approve & always
// allow" acts: it says plainly that the approval lasts.
func alwaysConfirm(inv *invocation.Invocation) map[string]any {
	scope := "this organization's"
	if inv.AutomationID != nil && *inv.AutomationID != "" {
		scope = "automation " + *inv.AutomationID + "'s"
	}
	text := fmt.Sprintf("This approves this request *and every later* `%s.%s` of %s, from now on, without asking anyone "+
		"(an allow mode; an R3 or R4 action still needs a human each time). Undo it in the console's Modes page.",
		inv.Integration, inv.Action, scope)
	if r := []rune(text); len(r) > 300 { // Slack's limit
		text = string(r[:299]) + "…"
	}
	return map[string]any{
		"title":   plain("Always allow this action?"),
		"text":    mrkdwn(text),
		"confirm": plain("Always allow"),
		"deny":    plain("Cancel"),
		"style":   "danger",
	}
}

// progressLine says who approved so far and how many approvals the
// request needs ("Approved by ana, 1 of 2"); "" when one approval decides.
func progressLine(p *approvers.Progress) string {
	if p == nil || (p.Required <= 1 && p.Group == nil) {
		return ""
	}
	var line string
	if len(p.Approvals) == 0 {
		line = fmt.Sprintf("Needs %d approval(s)", p.Required)
	} else {
		by := make([]string, len(p.Approvals))
		for i, a := range p.Approvals {
			by[i] = a.By
		}
		line = fmt.Sprintf("Approved by %s, %d of %d", strings.Join(by, ", "), len(p.Approvals), p.Required)
	}
	if p.Group != nil {
		line += " (approver group " + p.Group.Name + ")"
	}
	return line
}

// decidedMessage is the message of a decided invocation, buttons gone;
// cancel is a cancelled one's cancelled event.
func decidedMessage(inv *invocation.Invocation, cancel *invocation.Event) (string, []any) {
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
		if inv.ApprovedBy != nil {
			outcome = fmt.Sprintf("Approved by %s, then cancelled before it ran", *inv.ApprovedBy)
		}
		if cancel != nil && cancel.Actor != "" {
			outcome += ", by " + cancel.Actor
		}
		if cancel != nil && cancel.Reason != "" {
			outcome += ": " + cancel.Reason
		}
	case invocation.StatusPending:
		outcome = "Waiting for approval"
	default:
		outcome = fmt.Sprintf("Approved by %s", deref(inv.ApprovedBy, "someone"))
	}
	// Names and reasons are text, not Slack markup (a reason's <!channel>
	// would notify the channel).
	outcome = escapeMarkup.Replace(outcome)
	text := fmt.Sprintf("%s.%s — %s", inv.Integration, inv.Action, outcome)
	blocks := append(summary(inv, fmt.Sprintf("%s.%s", inv.Integration, inv.Action), nil),
		map[string]any{"type": "section", "text": mrkdwn("*" + outcome + "*")})
	return text, blocks
}

// summary says who asked for what: the action, its risk, the redacted
// params and when the request expires.
func summary(inv *invocation.Invocation, title string, rec *preview.Record) []any {
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
	blocks := []any{
		map[string]any{"type": "header", "text": plain(title)},
		map[string]any{"type": "section", "fields": []any{
			mrkdwn("*Requested by*\n" + who + " (" + inv.RequestedBy + ")"),
			mrkdwn("*Action*\n`" + inv.Integration + "." + inv.Action + "`"),
			mrkdwn("*Risk*\n" + string(tier) + " (" + tier.Risk() + ")"),
			mrkdwn("*Expires*\n" + expires),
		}},
	}
	blocks = append(blocks, preview.SlackBlocks(rec)...)
	return append(blocks, map[string]any{"type": "section", "text": mrkdwn("*Params*")}, preformatted(params))
}

// preformatted shows text as a code block whose text is only text: the
// params are the agent's, and in mrkdwn a ``` in them would end the code
// block and let them write the rest of the message the approver reads
// (another risk, a mention, a link).
func preformatted(text string) map[string]any {
	return map[string]any{"type": "rich_text", "elements": []any{map[string]any{
		"type": "rich_text_preformatted", "elements": []any{map[string]any{"type": "text", "text": text}},
	}}}
}

// escapeMarkup escapes the three characters Slack reads as markup in
// text.
var escapeMarkup = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

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
