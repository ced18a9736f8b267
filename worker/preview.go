package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/preview"
	"github.com/outboxd/outboxd/internal/domain/preview/previewstore"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/policy"
)

// PreviewWorker renders a pending invocation's preview (package preview):
// its source's rendering of the action, made with the invocation's
// credential within preview.Timeout, redacted like a result and stored.
// A rendering that fails is stored as failed with a note after its last
// attempt (invocation.PreviewAttempts), never retried further; an action
// without a rendering is stored as unsupported.
type PreviewWorker struct {
	river.WorkerDefaults[invocation.PreviewArgs]
	deps     *Deps
	logger   *slog.Logger
	store    *invocationstore.Store
	previews *previewstore.Store
}

// NewPreviewWorker returns the worker of preview jobs.
func NewPreviewWorker(deps *Deps) *PreviewWorker {
	return &PreviewWorker{deps: deps, logger: cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)),
		store: invocationstore.New(nil), previews: previewstore.New()}
}

// Timeout implements river.Worker: the rendering and its bookkeeping.
func (w *PreviewWorker) Timeout(*river.Job[invocation.PreviewArgs]) time.Duration {
	return preview.Timeout + jobOverhead
}

// Work implements river.Worker.
func (w *PreviewWorker) Work(ctx context.Context, job *river.Job[invocation.PreviewArgs]) error {
	inv, err := w.store.GetByID(ctx, w.deps.db(), job.Args.InvocationID)
	if errors.Is(err, errs.NotFound) {
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	if inv.Status != invocation.StatusPending {
		return nil // decided already: nobody will read the card
	}
	rec, retry := w.render(ctx, inv)
	if retry != nil && job.Attempt < job.MaxAttempts {
		return retry
	}
	stored, err := w.previews.Put(ctx, w.deps.db(), inv.OrganizationID, inv.ID, inv.IntentDigest, rec)
	if err != nil {
		return err
	}
	if !stored {
		// Its params were edited or it was asked again while this
		// rendered: the job queued then renders what will run.
		w.logger.InfoContext(ctx, "preview dropped: the intent changed while it rendered", "invocation_id", inv.ID,
			"organization_id", inv.OrganizationID)
		return nil
	}
	w.logger.InfoContext(ctx, "preview recorded", "invocation_id", inv.ID, "organization_id", inv.OrganizationID,
		"source_id", inv.Integration, "action_id", inv.Action, "status", rec.Status)
	return w.refreshSlack(ctx, inv)
}

// render renders inv's preview. retry, when set, is a passing failure
// worth another attempt; rec then says what to store if none is left.
func (w *PreviewWorker) render(ctx context.Context, inv invocation.Invocation) (rec *preview.Record, retry error) {
	failed := func(note string) *preview.Record {
		return &preview.Record{Status: preview.StatusFailed, Note: note}
	}
	if w.deps.Sources == nil {
		return failed("no sources are configured in this process"), nil
	}
	src, err := w.deps.Sources.Source(ctx, inv.OrganizationID, inv.Integration)
	if errors.Is(err, errs.NotFound) {
		return failed("source " + inv.Integration + " is not available (removed or disabled)"), nil
	}
	if err != nil {
		return failed("the source could not be resolved"), err
	}
	pv, ok := src.Source.(executors.Previewer)
	if !ok {
		return &preview.Record{Status: preview.StatusUnsupported, Note: "the " + inv.Integration + " source renders no preview"}, nil
	}
	var params json.RawMessage = inv.Params
	if inv.ParamsSealed != nil {
		exact, err := w.deps.Box.Open(inv.ParamsSealed, inv.ID[:])
		if err != nil {
			return failed("the sealed params do not open with secrets.key"), nil
		}
		params = exact
	}
	var tok credential.Token
	if src.NeedsCredential {
		tok, err = w.deps.Tokens.Token(ctx, credential.Request{
			Org: inv.OrganizationID, Integration: inv.Integration, UserID: deref(inv.UserID), Local: src.LocalCredential,
		}, false)
		if err != nil {
			note := "the credential could not be resolved"
			if errors.Is(err, errs.NotFound) {
				return failed("no credential is stored for " + inv.Integration), nil
			}
			return failed(note), err
		}
	}
	secrets := append([]string{tok.Value}, w.deps.Secrets...)
	if inv.ParamsSealed != nil {
		secrets = append(secrets, policy.SecretValues(params)...)
	}
	rctx, cancel := context.WithTimeout(ctx, preview.Timeout)
	defer cancel()
	p, err := pv.Preview(rctx, inv.Action, params, executors.ExecContext{
		Token: tok.Value, TokenKind: tok.Kind, OrganizationID: inv.OrganizationID,
		SessionID: deref(inv.SessionID), IdempotencyKey: inv.ID.String(),
	})
	switch {
	case errors.Is(err, executors.ErrNoPreview):
		return &preview.Record{Status: preview.StatusUnsupported, Note: "the action " + inv.Integration + "." + inv.Action + " renders no preview"}, nil
	case err != nil:
		e := executors.Classify(err)
		rec := failed("the preview could not be rendered: " + policy.ErrorText(e.Error(), secrets...))
		if e.Retryable {
			return rec, errors.New(rec.Note)
		}
		return rec, nil
	case p == nil:
		return failed("the source rendered nothing"), nil
	}
	return &preview.Record{Status: preview.StatusRendered, Preview: Redact(p, secrets)}, nil
}

// maxPreviewText bounds each text of a stored preview, in bytes.
const maxPreviewText = 4000

// Redact returns p with secrets, and the values of fields whose names say
// they are secret, replaced as in results; each text is cut to a bound.
func Redact(p *executors.Preview, secrets []string) *executors.Preview {
	raw, err := json.Marshal(p)
	if err != nil {
		return &executors.Preview{Kind: p.Kind, Title: "[unrenderable]"}
	}
	var out executors.Preview
	if json.Unmarshal(policy.Redact(raw, secrets...), &out) != nil {
		return &executors.Preview{Kind: p.Kind, Title: "[unrenderable]"}
	}
	// A field named like a secret ("api_key") is one, as a key of a
	// result would be: its values are redacted, an update's before and
	// after too.
	named := func(name, value string) string {
		doc, _ := json.Marshal(map[string]string{name: value})
		var v map[string]string
		if json.Unmarshal(policy.Redact(doc, secrets...), &v) != nil {
			return "[unrenderable]"
		}
		return cut(v[name])
	}
	for i, f := range out.Fields {
		out.Fields[i].Value = named(f.Name, f.Value)
		out.Fields[i].Description = cut(f.Description)
	}
	out.Title, out.Text = cut(out.Title), cut(out.Text)
	for i, c := range out.Changes {
		out.Changes[i].Before, out.Changes[i].After = named(c.Field, c.Before), named(c.Field, c.After)
	}
	for i, n := range out.Notes {
		out.Notes[i] = cut(n)
	}
	return &out
}

func cut(s string) string {
	if len(s) <= maxPreviewText {
		return s
	}
	s = s[:maxPreviewText]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// refreshSlack has the invocation's Slack approval message, when one was
// posted before the preview was ready, rewritten with it.
func (w *PreviewWorker) refreshSlack(ctx context.Context, inv invocation.Invocation) error {
	posted, err := w.previews.SlackMessagePosted(ctx, w.deps.db(), inv.ID)
	if err != nil || !posted {
		return err // not posted (yet): the post reads the preview
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return fmt.Errorf("inserting the Slack update: %w", err)
	}
	_, err = client.Insert(ctx, slackapproval.UpdateArgs{InvocationID: inv.ID}, nil)
	return err
}
