package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// defaultWindow is the approval window of a request asked again when the
// invocation had none to copy.
const defaultWindow = 24 * time.Hour

// intentChanged recomputes the intent of an invocation a human approved,
// before its call (package intent). When it is not the one approved (a
// tool redefined, a credential replaced, the params changed), it returns
// the invocation to pending with a new approval window as long as the
// first one, and reports true: the call must not happen. An invocation no
// human approved, or one approved before intents, is not checked.
func (w *ExecuteWorker) intentChanged(ctx context.Context, inv invocation.Invocation, rc invocation.RunContext,
	source *catalog.Source, tok credential.Token, log *slog.Logger,
) (bool, error) {
	if w.deps.Intents == nil || inv.ApprovedBy == nil || inv.ApprovedDigest == "" {
		return false, nil
	}
	var approved intent.Components
	if err := json.Unmarshal(inv.Intent, &approved); err != nil {
		return false, fmt.Errorf("reading the approved intent: %w", err)
	}
	params, perr := w.exactParams(inv)
	if perr != nil {
		return false, nil // the call fails on them next
	}
	defs, err := source.ListActions(ctx, executors.ExecContext{OrganizationID: inv.OrganizationID})
	if err != nil {
		return false, fmt.Errorf("listing the actions of %s: %w", inv.Integration, err)
	}
	// A tool removed since is redefined as nothing: its definition hash
	// is that of no schema.
	def := executors.Definition{ID: inv.Action, Params: json.RawMessage(`{"removed":true}`)}
	for _, d := range defs {
		if d.ID == inv.Action {
			def = d
			break
		}
	}
	now, err := w.deps.Intents.Components(ctx, &intent.Input{
		Org: inv.OrganizationID, UserID: deref(inv.UserID), Action: catalog.Action{Source: source, Definition: def},
		Params: params, Mode: inv.Mode, Key: approved.Key, Token: &tok,
	})
	if err != nil {
		return false, err
	}
	digest := now.Digest()
	if digest == inv.ApprovedDigest {
		return false, nil
	}
	changes := intent.Changes(&approved, &now)
	raw, err := json.Marshal(&now)
	if err != nil {
		return false, err
	}
	window := defaultWindow
	if inv.ExpiresAt != nil && inv.ExpiresAt.After(inv.CreatedAt) {
		window = inv.ExpiresAt.Sub(inv.CreatedAt)
	}
	reason := fmt.Sprintf("%s since the approval of intent %s; intent now %s: approve again",
		strings.Join(changes, ", "), intent.Prefix(inv.ApprovedDigest), intent.Prefix(digest))
	err = dbutil.WithTx(ctx, w.deps.db(), func(ctx context.Context, tx pgx.Tx) error {
		_, err := w.store.IntentChanged(ctx, tx, inv, &invocationstore.IntentChangedParams{
			ExpiresAt: w.deps.now().Add(window), IntentDigest: digest, Intent: raw, Changes: changes,
			StartedBefore: rc.StartedBefore, Reason: reason,
		})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("asking for approval again: %w", err)
	}
	w.deps.Metrics.InvocationStatus(inv.Mode, string(invocation.StatusPending))
	log.WarnContext(ctx, "the approved intent changed before the call; asking for approval again",
		"changes", changes, "approved_digest", intent.Prefix(inv.ApprovedDigest), "intent_digest", intent.Prefix(digest))
	return true, nil
}
