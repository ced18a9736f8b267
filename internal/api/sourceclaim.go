package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/policy"
)

// sourceAllowed is nil when c's sources claim allows the source id, else
// the 403 source_not_allowed an invoke of that source gets: a token
// narrowed to some sources changes nothing of another's (its action
// modes, credential, connector or database).
func sourceAllowed(c *auth.Claims, id string) error {
	if c.Sources.Allows(id) {
		return nil
	}
	return fmt.Errorf("%w: %s", errs.SourceNotAllowed, id)
}

// unnarrowed is nil when c carries no sources claim, else a 403
// source_not_allowed saying why what it asks needs a token of every
// source: a new source is in no claim, and a webhook carries every
// source's invocations.
func unnarrowed(c *auth.Claims, why string) error {
	if !c.Sources.Present() {
		return nil
	}
	return errs.Errorf(errs.SourceNotAllowed, "%s: %s; use a token without a sources claim", errs.SourceNotAllowed, why)
}

// pathRecord reads the record of the path's id with get when the caller
// needs it (want: for the audit trail) or c's sources claim does (to see
// its source), and checks the claim: a record of a source outside it is
// the 403 source_not_allowed, an unknown id get's error (not found). nil
// when neither needs it. One read serves both, so a claim costs a change
// no read of its own while the audit trail is on.
func pathRecord[T any](r *http.Request, c *auth.Claims, want bool, get func(ctx context.Context, org, id string) (T, error), source func(T) string) (*T, error) {
	if !want && !c.Sources.Present() {
		return nil, nil
	}
	rec, err := get(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if err := sourceAllowed(c, source(rec)); err != nil {
		return nil, err
	}
	return &rec, nil
}

// inClaim is the items whose source c's sources claim allows, in their
// order (nil stays nil).
func inClaim[T any](c *auth.Claims, items []T, source func(T) string) []T {
	if items == nil || !c.Sources.Present() {
		return items
	}
	out := make([]T, 0, len(items))
	for _, item := range items {
		if c.Sources.Allows(source(item)) {
			out = append(out, item)
		}
	}
	return out
}

// modeSource is the source of an action-mode key "<source>:<action>" (the
// source may hold colons, as mcp:<id> does), and false for a key of no
// such shape, which the settings refuse.
func modeSource(key string) (string, bool) {
	i := strings.LastIndex(key, ":")
	if i <= 0 || i == len(key)-1 {
		return "", false
	}
	return key[:i], true
}

// modesInClaim is the overrides whose source c's sources claim allows.
func modesInClaim(c *auth.Claims, modes policy.Modes) policy.Modes {
	if !c.Sources.Present() {
		return modes
	}
	out := make(policy.Modes, len(modes))
	for key, mode := range modes {
		if src, ok := modeSource(key); ok && c.Sources.Allows(src) {
			out[key] = mode
		}
	}
	return out
}
