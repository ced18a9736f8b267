// Package intent is the sealed intent of an invocation that waits for a
// human (docs/intents.md): the digest of what determines its effect, which
// an approval records and the worker recomputes before it calls the
// provider, and the approver's edits of its params.
//
// Nothing here holds a secret: the exact params and the credential enter a
// digest only as keyed fingerprints (secretbox.Box.MAC), so the components
// may be stored and shown.
package intent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/policy"
)

// PrefixLen is how many hex characters of a digest a card, a timeline
// entry or an answer shows for a human to match.
const PrefixLen = 12

// Prefix returns the first PrefixLen characters of digest.
func Prefix(digest string) string {
	if len(digest) <= PrefixLen {
		return digest
	}
	return digest[:PrefixLen]
}

// Components are what determines an invocation's effect.
type Components struct {
	// Key is the id of the secrets key the fingerprints below were made
	// with (secretbox.Box.MAC): a recheck makes them again with it, so a
	// key rotation changes no intent while the old key is in the ring.
	Key    string `json:"key"`
	Source string `json:"source"`
	Action string `json:"action"`
	// Definition is policy.DefinitionHash of the action's params schema:
	// it changes when a connector's tool is redefined.
	Definition string `json:"definition"`
	// Params is the keyed fingerprint of the exact params in canonical
	// JSON (secret values included, never shown).
	Params     string     `json:"params"`
	Credential Credential `json:"credential"`
	// Endpoint is the keyed fingerprint of the server an organization
	// chose for the source (executors.Endpointed: a connector's URL);
	// empty for the others, whose digests it leaves as they were.
	Endpoint string `json:"endpoint,omitempty"`
	Mode     string `json:"mode"`
}

// Credential identifies the credential a call is made with.
type Credential struct {
	// Via is where the token comes from: "store" (outboxd's encrypted
	// store), "broker" (the token broker, asked for User at call time) or
	// "none" (the source takes no credential).
	Via string `json:"via"`
	// User is the user the broker is asked for ("" for the organization).
	User string `json:"user,omitempty"`
	// Kind is the stored token's kind (api_key, oauth).
	Kind string `json:"kind,omitempty"`
	// Fingerprint is the keyed fingerprint of the stored token: another
	// secret stored in its place (another identity) changes it. Empty
	// when no credential is stored.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Digest is the hex SHA-256 of the components' canonical JSON.
func (c *Components) Digest() string {
	raw, _ := json.Marshal(c)
	canonical, err := policy.CanonicalJSON(raw)
	if err != nil { // cannot happen: raw is encoding/json's
		canonical = raw
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// The changes Changes reports.
const (
	ChangeSource     = "source changed"
	ChangeDefinition = "tool redefined"
	ChangeParams     = "params edited"
	ChangeCredential = "credential replaced"
	ChangeEndpoint   = "server changed"
	ChangeMode       = "mode changed"
	ChangeKey        = "secrets key removed"
	// ChangeGrant is the revocation of the grant that let an invocation
	// through, before its call (the worker's).
	ChangeGrant = "grant revoked"
)

// Changes lists what differs from approved to now, in a fixed order; empty
// when nothing does.
func Changes(approved, now *Components) []string {
	var out []string
	if approved.Source != now.Source || approved.Action != now.Action {
		out = append(out, ChangeSource)
	}
	if approved.Definition != now.Definition {
		out = append(out, ChangeDefinition)
	}
	switch {
	case approved.Key != now.Key:
		// Fingerprints of two keys cannot be compared.
		out = append(out, ChangeKey)
	default:
		if approved.Params != now.Params {
			out = append(out, ChangeParams)
		}
		if approved.Credential != now.Credential {
			out = append(out, ChangeCredential)
		}
		if approved.Endpoint != now.Endpoint {
			out = append(out, ChangeEndpoint)
		}
	}
	if approved.Mode != now.Mode {
		out = append(out, ChangeMode)
	}
	return out
}

// MAC fingerprints values under a server key (secretbox.Box).
type MAC interface {
	// MACKey is the id of the key new fingerprints are made with.
	MACKey() string
	// MAC fingerprints data for label with key id; false when there is no
	// such key.
	MAC(id, label string, data []byte) (string, bool)
}

// TokenSource reads stored credentials for the caller's organization, at
// creation and at an approval (the API's), through db: the transaction the
// intent is sealed in (Input.DB), so that no second connection is taken
// while it holds one; nil, its own.
type TokenSource interface {
	Token(ctx context.Context, db dbutil.DB, req credential.Request) (credential.Token, error)
}

// Deps are what Intents needs.
type Deps struct {
	MAC MAC
	// Tokens reads stored credentials where no token is at hand (at
	// creation, in the API).
	Tokens TokenSource
	// Broker says provider tokens come from a token broker (token_source
	// broker): a non-local credential is then the broker's for the user,
	// whose tokens change at will and have no fingerprint.
	Broker bool
}

// Intents computes intents.
type Intents struct {
	deps Deps
}

// New returns Intents.
func New(deps *Deps) *Intents { return &Intents{deps: *deps} }

// Input is what an intent is computed from.
type Input struct {
	Org    string
	UserID string
	Action catalog.Action
	// Params are the exact params (unredacted).
	Params json.RawMessage
	Mode   string
	// DB is the transaction the intent is sealed in, where stored
	// credentials are read (Deps.Tokens).
	DB dbutil.DB
	// Key is the key id of the intent this one is compared with (its
	// Components.Key); "" or a key no longer in the ring: the primary.
	Key string
	// Token is the credential the call will use, when already resolved
	// (the worker); nil resolves it (stored credentials only).
	Token *credential.Token
}

// Components computes in's components.
func (x *Intents) Components(ctx context.Context, in *Input) (Components, error) {
	canonical, err := paramsJSON(in.Params)
	if err != nil {
		return Components{}, err
	}
	def, err := policy.DefinitionHash(in.Action.Definition.Params)
	if err != nil {
		return Components{}, fmt.Errorf("hashing the definition: %w", err)
	}
	src := in.Action.Source
	c := Components{Key: in.Key, Source: src.ID(), Action: in.Action.Definition.ID, Definition: def, Mode: in.Mode}
	if !x.Current(&c) {
		c.Key = x.deps.MAC.MACKey()
	}
	c.Params = x.mac(c.Key, "intent.params", canonical)
	if e, ok := src.Source.(executors.Endpointed); ok {
		c.Endpoint = x.mac(c.Key, "intent.endpoint", []byte(e.Endpoint()))
	}
	c.Credential, err = x.credential(ctx, in, c.Key)
	return c, err
}

// paramsJSON is the form of params their fingerprint is made of: their
// canonical JSON, numbers as jsonb stores them (storedNumbers), so that
// the params the agent sent and the same params read back from the
// database are one intent.
func paramsJSON(params json.RawMessage) ([]byte, error) {
	canonical, err := policy.CanonicalJSON(params)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing params: %w", err)
	}
	return storedNumbers(canonical), nil
}

// mac fingerprints data with key id, which the ring has.
func (x *Intents) mac(id, label string, data []byte) string {
	fp, _ := x.deps.MAC.MAC(id, label, data)
	return fp
}

// Current reports whether c's fingerprints can be made again: the key
// they were made with is in the ring. One that is not is computed anew
// (Components).
func (x *Intents) Current(c *Components) bool {
	_, ok := x.deps.MAC.MAC(c.Key, "", nil)
	return ok
}

// WithParams returns c, which must be Current, with params as its exact
// params.
func (x *Intents) WithParams(c Components, params json.RawMessage) (Components, error) {
	canonical, err := paramsJSON(params)
	if err != nil {
		return c, err
	}
	c.Params = x.mac(c.Key, "intent.params", canonical)
	return c, nil
}

func (x *Intents) credential(ctx context.Context, in *Input, key string) (Credential, error) {
	src := in.Action.Source
	switch {
	case !src.NeedsCredential:
		return Credential{Via: "none"}, nil
	case x.deps.Broker && !src.LocalCredential:
		return Credential{Via: "broker", User: in.UserID}, nil
	}
	tok := in.Token
	if tok == nil {
		if x.deps.Tokens == nil {
			return Credential{}, errors.New("no credential reader")
		}
		t, err := x.deps.Tokens.Token(ctx, in.DB, credential.Request{
			Org: in.Org, Integration: src.ID(), UserID: in.UserID, Local: src.LocalCredential,
		})
		if errors.Is(err, errs.NotFound) {
			return Credential{Via: "store"}, nil
		}
		if err != nil {
			return Credential{}, fmt.Errorf("reading the credential: %w", err)
		}
		tok = &t
	}
	return Credential{Via: "store", Kind: tok.Kind, Fingerprint: x.mac(key, "intent.credential", []byte(tok.Value))}, nil
}
