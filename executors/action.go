package executors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces a secret in error texts and stored answers.
const Redacted = "[REDACTED]"

// Action is one action of a provider: its definition and the handler that
// runs it. Build one with NewAction.
type Action struct {
	Definition Definition
	// handler runs the action against the value the provider's Connect
	// built from its configuration.
	handler func(ctx context.Context, conn any, params json.RawMessage, ec ExecContext) (Result, error)
	// preview, when set, renders what the action will do (WithPreview).
	preview func(ctx context.Context, conn any, params json.RawMessage, ec ExecContext) (*Preview, error)
}

// Checker is implemented by params types that check themselves once
// decoded (required fields, ranges the schema cannot say). Its error text
// says what is wrong, e.g. "channel is required".
type Checker interface {
	Check() error
}

// NewAction pairs def with run, a handler of the provider's connection C
// (what its Connect returns) taking params of type P. The action decodes
// params strictly into a P before run is called (see DecodeParams), so run
// sees only checked params.
func NewAction[C, P any](def Definition, run func(c C, ctx context.Context, p *P, ec ExecContext) (Result, error)) Action {
	return Action{Definition: def, handler: func(ctx context.Context, conn any, params json.RawMessage, ec ExecContext) (Result, error) {
		c, ok := conn.(C)
		if !ok {
			return Result{}, fmt.Errorf("executors: action %s runs on a %T, not on a %T", def.ID, *new(C), conn)
		}
		var p P
		if err := DecodeParams(def.ID, params, &p); err != nil {
			return Result{}, err
		}
		return run(c, ctx, &p, ec)
	}}
}

// DecodeParams decodes params strictly into p: a JSON object with no
// field p does not have and nothing after it, then p.Check when p is a
// Checker. A failure is an invalid_params Error. The worker validates params
// against the action's schema before executing; this guards the provider's
// request against a caller that did not.
func DecodeParams(actionID string, params json.RawMessage, p any) error {
	if trimmed := bytes.TrimSpace(params); len(trimmed) == 0 || trimmed[0] != '{' {
		return InvalidParams(actionID, "params must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return InvalidParams(actionID, err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return InvalidParams(actionID, "unexpected data after the JSON object")
	}
	if c, ok := p.(Checker); ok {
		if err := c.Check(); err != nil {
			return InvalidParams(actionID, err.Error())
		}
	}
	return nil
}

// InvalidParams is the error of params an action cannot take: code
// invalid_params, not retryable, "invalid <action> params: <why>".
func InvalidParams(actionID, why string) *Error {
	return &Error{Code: "invalid_params", Message: fmt.Sprintf("invalid %s params: %s", actionID, why)}
}

// UnknownAction is the error a source's Execute returns for an action it
// does not define: code unknown_action, not retryable, and
// ErrUnknownAction as its cause.
func UnknownAction(source, actionID string) error {
	return &Error{
		Code:    "unknown_action",
		Message: fmt.Sprintf("the %s source has no action %q", source, actionID),
		Cause:   ErrUnknownAction,
	}
}

// Scrub replaces each non-empty secret, in order, with Redacted in the text
// of err. Messages are built without the token, but some embed text from
// elsewhere (network errors, the provider's own fields), and a token in an
// invocation's stored error would outlive any rotation.
//
// A classified error keeps its identity: the Code and Message of the *Error
// in its chain are scrubbed in place. Any other error whose text holds a
// secret is replaced by a plain error with the scrubbed text.
func Scrub(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool {
		// An empty secret would match between every rune.
		return s == ""
	})
	if len(secrets) == 0 {
		return err
	}
	scrub := func(s string) string {
		for _, secret := range secrets {
			s = strings.ReplaceAll(s, secret, Redacted)
		}
		return s
	}
	var e *Error
	if errors.As(err, &e) {
		e.Code = scrub(e.Code)
		e.Message = scrub(e.Message)
		return err
	}
	if msg := err.Error(); scrub(msg) != msg {
		return errors.New(scrub(msg))
	}
	return err
}

// providerSource is the Source of a Provider: its actions run against the
// connection Connect built from the provider's configuration.
type providerSource struct {
	p       *Provider
	conn    any
	actions map[string]*Action
}

// ID returns the provider's id.
func (s *providerSource) ID() string { return s.p.ID }

// ListActions returns the provider's definitions, in their order. They do
// not depend on the caller, so ec is ignored and no request is made. Each
// call returns copies, so a caller that mutates one cannot corrupt
// another's.
func (s *providerSource) ListActions(context.Context, ExecContext) ([]Definition, error) {
	defs := make([]Definition, len(s.p.Actions))
	for i, a := range s.p.Actions {
		d := a.Definition
		d.Params = bytes.Clone(d.Params)
		d.Recipients = slices.Clone(d.Recipients)
		defs[i] = d
	}
	return defs, nil
}

// Execute runs one action. An action the provider does not define is an
// unknown_action Error whose cause is ErrUnknownAction. No failure's text
// contains ec.Token, as it is or escaped into a URL by params.
func (s *providerSource) Execute(ctx context.Context, actionID string, params json.RawMessage, ec ExecContext) (Result, error) {
	a, ok := s.actions[actionID]
	if !ok {
		return Result{}, UnknownAction(s.p.ID, actionID)
	}
	res, err := a.handler(ctx, s.conn, params, ec)
	if err != nil {
		return Result{}, Scrub(err, ec.Token, url.PathEscape(ec.Token), url.QueryEscape(ec.Token))
	}
	return res, nil
}
