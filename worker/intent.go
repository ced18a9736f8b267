package worker

import (
	"cmp"
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
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/policy"
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
	now, ok, err := w.intentNow(ctx, inv, source, tok, inv.Mode, approved.Key)
	if err != nil || !ok {
		return false, err
	}
	// An intent sealed before intents named the server (no endpoint) of a
	// source that has one (a connector, whose URL may have been changed
	// since) differs from the intent now: nobody approved a server, so the
	// call waits for an approval that does, as for any other change.
	digest := now.Digest()
	if digest == inv.ApprovedDigest {
		return false, nil
	}
	changes := intent.Changes(&approved, &now)
	reason := fmt.Sprintf("%s since the approval of intent %s; intent now %s: approve again",
		strings.Join(changes, ", "), intent.Prefix(inv.ApprovedDigest), intent.Prefix(digest))
	if approved.Endpoint == "" && now.Endpoint != "" {
		reason = fmt.Sprintf("%s: intent %s was approved without the server, which an approval names since; intent now %s: approve again",
			strings.Join(changes, ", "), intent.Prefix(inv.ApprovedDigest), intent.Prefix(digest))
	}
	if err := w.askAgain(ctx, inv, rc, &now, changes, "", reason); err != nil {
		return false, err
	}
	log.WarnContext(ctx, "the approved intent changed before the call; asking for approval again",
		"changes", changes, "approved_digest", intent.Prefix(inv.ApprovedDigest), "intent_digest", intent.Prefix(digest))
	return true, nil
}

// grantLapsed returns to a human an invocation a grant let through
// (package grant) when the grant no longer holds for it before its call:
// revoked (by an admin, or by outboxd with the action's definition or the
// source's credential), or made for another definition of the action than
// the one that would run (a tool redefined, or a reviewed connector tool
// drifted, since the invocation was let through; the grant itself is
// revoked at the action's next invocation). The invocation then waits
// for an approval, as it would have without the grant (require_approval),
// with a new approval window, and it reports true: the call must not
// happen. A grant that ran out of uses or time after letting it through
// still holds for it.
func (w *ExecuteWorker) grantLapsed(ctx context.Context, inv invocation.Invocation, rc invocation.RunContext,
	source *catalog.Source, tok credential.Token, log *slog.Logger,
) (bool, error) {
	if inv.GrantID == nil || inv.ApprovedBy != nil {
		return false, nil // no grant, or a human approved it since
	}
	g, found, err := w.grants.Get(dbutil.WithOrg(ctx, inv.OrganizationID), w.deps.db(), inv.OrganizationID, *inv.GrantID)
	if err != nil {
		return false, fmt.Errorf("reading the grant that let the invocation through: %w", err)
	}
	change := intent.ChangeGrant
	reason := "the grant that let it through was deleted before the call: approve it"
	switch {
	case found && g.RevokedAt != nil:
		reason = fmt.Sprintf("grant %s, which let it through, was revoked (%s, by %s) before the call: approve it",
			g.ID, g.RevokeReason, g.RevokedBy)
	case found:
		def, err := w.definition(ctx, inv, source)
		if err != nil {
			return false, err
		}
		if grantCovers(g.DefinitionHash, catalog.Action{Source: source, Definition: def}) {
			return false, nil
		}
		change = intent.ChangeDefinition
		reason = fmt.Sprintf("the tool was redefined since grant %s let it through: approve it", g.ID)
	}
	mode := string(policy.ModeRequireApproval)
	var now *intent.Components
	if w.deps.Intents != nil {
		c, ok, err := w.intentNow(ctx, inv, source, tok, mode, "")
		if err != nil {
			return false, err
		}
		if ok {
			now = &c
		}
	}
	if err := w.askAgain(ctx, inv, rc, now, []string{change}, mode, reason); err != nil {
		return false, err
	}
	log.WarnContext(ctx, "the grant that let the invocation through no longer holds for it; asking for approval",
		"grant_id", *inv.GrantID, "change", change, "revoke_reason", g.RevokeReason)
	return true, nil
}

// grantCovers reports whether a grant made for the definition hashed to
// made still covers action a as it would run now (grant.Covers); a
// definition that cannot be hashed is covered by none.
func grantCovers(made string, a catalog.Action) bool {
	hash, err := policy.DefinitionHash(a.Definition.Params)
	return err == nil && grant.Covers(made, hash, a.ReviewDrifted(hash))
}

// intentNow computes inv's intent as it would run now, with mode and the
// key of the intent it is compared with ("" for the primary); false when
// its params cannot be read (the call fails on them next).
func (w *ExecuteWorker) intentNow(ctx context.Context, inv invocation.Invocation, source *catalog.Source,
	tok credential.Token, mode, key string,
) (intent.Components, bool, error) {
	params, perr := w.exactParams(inv)
	if perr != nil {
		return intent.Components{}, false, nil
	}
	def, err := w.definition(ctx, inv, source)
	if err != nil {
		return intent.Components{}, false, err
	}
	c, err := w.deps.Intents.Components(ctx, &intent.Input{
		Org: inv.OrganizationID, UserID: deref(inv.UserID), Action: catalog.Action{Source: source, Definition: def},
		Params: params, Mode: mode, Key: key, Token: &tok,
	})
	return c, err == nil, err
}

// definition returns the definition inv's action has now; a tool removed
// since is redefined as nothing: its definition hash is that of no schema.
func (w *ExecuteWorker) definition(ctx context.Context, inv invocation.Invocation, source *catalog.Source) (executors.Definition, error) {
	defs, err := source.ListActions(ctx, executors.ExecContext{OrganizationID: inv.OrganizationID})
	if err != nil {
		return executors.Definition{}, fmt.Errorf("listing the actions of %s: %w", inv.Integration, err)
	}
	for _, d := range defs {
		if d.ID == inv.Action {
			return d, nil
		}
	}
	return executors.Definition{ID: inv.Action, Params: json.RawMessage(`{"removed":true}`)}, nil
}

// askAgain returns inv to pending before its call, with the intent now
// (nil: none) and what changed, under mode ("" keeps it), for a new
// approval window as long as its first one (defaultWindow when it had
// none).
func (w *ExecuteWorker) askAgain(ctx context.Context, inv invocation.Invocation, rc invocation.RunContext,
	now *intent.Components, changes []string, mode, reason string,
) error {
	p := &invocationstore.IntentChangedParams{Changes: changes, StartedBefore: rc.StartedBefore, Reason: reason, Mode: mode}
	if now != nil {
		raw, err := json.Marshal(now)
		if err != nil {
			return err
		}
		p.IntentDigest, p.Intent = now.Digest(), raw
	}
	window := defaultWindow
	if inv.ExpiresAt != nil && inv.ExpiresAt.After(inv.CreatedAt) {
		window = inv.ExpiresAt.Sub(inv.CreatedAt)
	}
	p.ExpiresAt = w.deps.now().Add(window)
	err := dbutil.WithTx(ctx, w.deps.db(), func(ctx context.Context, tx pgx.Tx) error {
		_, err := w.store.IntentChanged(ctx, tx, inv, p)
		return err
	})
	if err != nil {
		return fmt.Errorf("asking for approval again: %w", err)
	}
	w.deps.Metrics.InvocationStatus(cmp.Or(mode, inv.Mode), string(invocation.StatusPending))
	return nil
}
