package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/policy"
)

// seal records the intent of an invocation created pending (package
// intent): its digest and components, which an approval approves. The
// others carry none: no human approves them.
func (s *Service) seal(ctx context.Context, tx pgx.Tx, p *prepared, create *invocation.CreateParams) error {
	if s.deps.Intents == nil || create.Status != invocation.StatusPending {
		return nil
	}
	c, err := s.deps.Intents.Components(dbutil.WithOrg(ctx, create.OrganizationID), &intent.Input{
		Org: create.OrganizationID, UserID: create.UserID, Action: p.action, Params: p.r.params, Mode: create.Mode, DB: tx,
	})
	if err != nil {
		return fmt.Errorf("sealing the intent: %w", err)
	}
	return setIntent(&create.IntentDigest, &create.Intent, &c)
}

func setIntent(digest *string, raw *json.RawMessage, c *intent.Components) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	*digest, *raw = c.Digest(), b
	return nil
}

// rekey makes a pending invocation's intent again with the primary key
// when the key it was made with left the ring (secrets.keys), so that the
// approval approves fingerprints the worker can make again. An intent
// whose key is in the ring is left as it is.
func (s *Service) rekey(ctx context.Context, tx pgx.Tx, inv invocation.Invocation, resolve actionOf) (invocation.Invocation, error) {
	var old intent.Components
	if s.deps.Intents == nil || len(inv.Intent) == 0 || json.Unmarshal(inv.Intent, &old) != nil || s.deps.Intents.Current(&old) {
		return inv, nil
	}
	exact, err := s.exactParams(inv)
	if err != nil {
		return inv, err
	}
	action, err := resolve(&inv)
	if err != nil {
		return inv, err
	}
	c, err := s.deps.Intents.Components(dbutil.WithOrg(ctx, inv.OrganizationID), &intent.Input{
		Org: inv.OrganizationID, UserID: deref(inv.UserID), Action: action, Params: exact, Mode: inv.Mode, DB: tx,
	})
	if err != nil {
		return inv, err
	}
	// Only the fingerprints are made again: the rest is what the approver
	// saw, so that a tool redefined, or a credential or server that came
	// or went, since the request is still found changed by the worker.
	c = rekeyed(&old, &c)
	if err := setIntent(&inv.IntentDigest, &inv.Intent, &c); err != nil {
		return inv, err
	}
	return inv, s.store.Rekey(ctx, tx, inv.ID, inv.IntentDigest, inv.Intent)
}

// rekeyed is old made again with fresh's key and keyed fingerprints:
// the exact params' (unchanged), the credential's and the endpoint's,
// where old had them. A fingerprint made with a removed key cannot be
// compared, so a credential replaced or a server moved while the key was
// gone is not seen; what needs no key (the source, the action's
// definition, the mode, how the credential is had) stays the one approved.
func rekeyed(old, fresh *intent.Components) intent.Components {
	c := *old
	c.Key, c.Params = fresh.Key, fresh.Params
	if old.Credential.Fingerprint != "" {
		c.Credential.Fingerprint = fresh.Credential.Fingerprint
	}
	if old.Endpoint != "" {
		c.Endpoint = fresh.Endpoint
	}
	return c
}

// edit applies an approver's params to a pending invocation, inside the
// approval's transaction: params is the full new params object as the
// approver saw them (redacted values left as they were keep their exact
// values). They are validated against the action's schema, redacted and
// sealed as at creation; the original params, the edit (who, when, the
// diff) and the new intent are recorded with an edited event. Params equal
// to the current ones change nothing.
func (s *Service) edit(ctx context.Context, tx pgx.Tx, inv invocation.Invocation, by string, params json.RawMessage, resolve actionOf) (invocation.Invocation, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(params), []byte("{")) {
		return inv, errs.Invalid("params", "params must be a JSON object")
	}
	// A key repeated in one object is refused as in an invoke's params:
	// checked on the approver's own text, which KeepSealed reads (of the
	// two, the last) before the schema is.
	if fieldErrs, err := s.validator.Validate(anyObject, params); err != nil || len(fieldErrs) > 0 {
		if err != nil {
			return inv, err
		}
		return inv, &errs.ValidationError{Message: "invalid params for " + inv.Integration + "." + inv.Action, Fields: fieldErrs}
	}
	exact, err := s.exactParams(inv)
	if err != nil {
		return inv, err
	}
	edited, err := intent.KeepSealed(params, inv.Params, exact)
	if err != nil {
		return inv, errs.Invalid("params", "params are not valid JSON")
	}
	action, err := resolve(&inv)
	if err != nil {
		return inv, err
	}
	fieldErrs, err := s.validator.Validate(action.Definition.Params, edited)
	if err != nil {
		return inv, fmt.Errorf("validating params of %s.%s: %w", inv.Integration, inv.Action, err)
	}
	if len(fieldErrs) > 0 {
		return inv, &errs.ValidationError{Message: "invalid params for " + inv.Integration + "." + inv.Action, Fields: fieldErrs}
	}
	stored := policy.Redact(edited)
	diff, err := intent.Diff(inv.Params, stored)
	if err != nil {
		return inv, err
	}
	same, err := sameJSON(exact, edited)
	if err != nil || (same && len(diff) == 0) {
		return inv, err
	}
	if !same {
		// A secret replaced shows no change in the redacted params: the
		// edit still names where it is.
		hidden, err := intent.Hidden(exact, edited, inv.Params, stored)
		if err != nil {
			return inv, err
		}
		diff = append(diff, hidden...)
	}
	var sealed []byte
	if redacted(edited, stored) {
		sealed = s.deps.Box.Seal(edited, inv.ID[:])
	}
	var c intent.Components
	sealedBefore := len(inv.Intent) > 0 && json.Unmarshal(inv.Intent, &c) == nil
	if !sealedBefore || s.deps.Intents == nil || !s.deps.Intents.Current(&c) {
		// An invocation created before intents (or whose intent's key
		// left the ring): its intent from now on.
		if s.deps.Intents == nil {
			return inv, errs.Errorf(errs.Conflict, "editing params needs sealed intents")
		}
		fresh, err := s.deps.Intents.Components(dbutil.WithOrg(ctx, inv.OrganizationID), &intent.Input{
			Org: inv.OrganizationID, UserID: deref(inv.UserID), Action: action, Params: edited, Mode: inv.Mode, DB: tx,
		})
		if err != nil {
			return inv, err
		}
		if old := c; sealedBefore {
			c = rekeyed(&old, &fresh)
		} else {
			c = fresh
		}
	} else if c, err = s.deps.Intents.WithParams(c, edited); err != nil {
		return inv, err
	}
	p := &invocationstore.EditParams{Actor: by, Params: stored, Sealed: sealed}
	if err := setIntent(&p.IntentDigest, &p.Intent, &c); err != nil {
		return inv, err
	}
	if p.Edit, err = json.Marshal(intent.Edit{By: by, At: time.Now().UTC(), Diff: diff, Digest: p.IntentDigest}); err != nil {
		return inv, err
	}
	paths := make([]string, len(diff))
	for i, d := range diff {
		paths[i] = d.Path
	}
	p.Reason = fmt.Sprintf("params edited (%s); intent %s", strings.Join(paths, ", "), intent.Prefix(p.IntentDigest))
	return s.store.Edit(ctx, tx, inv.ID, p)
}

// anyObject is the schema of any JSON object.
var anyObject = json.RawMessage(`{"type":"object"}`)

// sameJSON reports whether a and b are the same document, whatever their
// key order and spacing.
func sameJSON(a, b json.RawMessage) (bool, error) {
	ca, err := policy.CanonicalJSON(a)
	if err != nil {
		return false, err
	}
	cb, err := policy.CanonicalJSON(b)
	if err != nil {
		return false, errs.Invalid("params", "params are not valid JSON")
	}
	return bytes.Equal(ca, cb), nil
}

// exactParams are inv's params as the provider gets them: opened from
// their seal when redaction hid secrets in the stored ones.
func (s *Service) exactParams(inv invocation.Invocation) (json.RawMessage, error) {
	if inv.ParamsSealed == nil {
		return inv.Params, nil
	}
	exact, err := s.deps.Box.Open(inv.ParamsSealed, inv.ID[:])
	if err != nil {
		return nil, fmt.Errorf("opening the sealed params: %w", err)
	}
	return exact, nil
}
