package executors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
)

// acmeConn is what the test provider's actions run on.
type acmeConn struct{ baseURL string }

// greetParams are the params of the test provider's greet action.
type greetParams struct {
	Name string `json:"name"`
}

func (p *greetParams) Check() error {
	if p.Name == "" {
		return errors.New("name is required")
	}
	return nil
}

// greet answers with the connection's base URL and the name; a name of
// "leak" fails with the token in the message, as a careless provider
// error might.
func (c *acmeConn) greet(_ context.Context, p *greetParams, ec executors.ExecContext) (executors.Result, error) {
	if p.Name == "leak" {
		return executors.Result{}, &executors.Error{Code: "boom", Message: "the call to " + c.baseURL + "?token=" + ec.Token + " failed"}
	}
	data, err := json.Marshal(map[string]string{"base_url": c.baseURL, "hello": p.Name})
	return executors.Result{Data: data, ProviderRef: p.Name}, err
}

// acme is a provider for the tests: one action, a base URL it refuses
// when "bad".
func acme(id, bucket string) executors.Provider {
	return executors.Provider{
		ID:     id,
		Name:   "Acme",
		Bucket: executors.BucketConfig{Name: bucket},
		Guide:  "Acme greets.",
		Actions: []executors.Action{executors.NewAction(executors.Definition{
			ID: "greet", Tier: executors.TierR0, Params: json.RawMessage(`{"type":"object"}`), Recipients: []string{"name"},
		}, (*acmeConn).greet)},
		Connect: func(cfg *executors.ProviderConfig) (any, error) {
			if cfg.BaseURL == "bad" {
				return nil, errors.New("bad base URL")
			}
			return &acmeConn{baseURL: cfg.BaseURL}, nil
		},
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()

	t.Run("RegistersSourcesWithTheirConfigBucketAndRegistration", func(t *testing.T) {
		t.Parallel()

		r, err := executors.Build(
			[]executors.Provider{acme("acme", "acme.api"), acme("other", "")},
			map[string]executors.ProviderConfig{"acme": {BaseURL: "http://acme.test"}},
		)
		require.NoError(t, err)
		require.Equal(t, []string{"acme", "other"}, r.IDs())
		s, ok := r.Source("acme")
		require.True(t, ok)
		require.Equal(t, "acme", s.ID())
		res, err := s.Execute(context.Background(), "greet", json.RawMessage(`{"name":"ada"}`), executors.ExecContext{})
		require.NoError(t, err)
		require.JSONEq(t, `{"base_url":"http://acme.test","hello":"ada"}`, string(res.Data))
		require.Equal(t, "ada", res.ProviderRef)
		require.Equal(t, "acme.api", r.Bucket("acme"))
		require.Empty(t, r.Bucket("other"))

		p, ok := r.Provider("acme")
		require.True(t, ok)
		require.Equal(t, "Acme", p.Name)
		require.Equal(t, "Acme greets.", p.Guide)
	})

	t.Run("ConfigError", func(t *testing.T) {
		t.Parallel()

		_, err := executors.Build([]executors.Provider{acme("acme", "")}, map[string]executors.ProviderConfig{"acme": {BaseURL: "bad"}})
		require.EqualError(t, err, "bad base URL")
	})

	t.Run("AddedSourceHasNoRegistration", func(t *testing.T) {
		t.Parallel()

		r := executors.NewRegistry(stubSource{id: "plain"})
		_, ok := r.Provider("plain")
		require.False(t, ok)
	})
}

// stubSource is a source with an id and nothing else.
type stubSource struct{ id string }

func (s stubSource) ID() string { return s.id }

func (s stubSource) ListActions(context.Context, executors.ExecContext) ([]executors.Definition, error) {
	return nil, nil
}

func (s stubSource) Execute(context.Context, string, json.RawMessage, executors.ExecContext) (executors.Result, error) {
	return executors.Result{}, nil
}

func TestProviderSource(t *testing.T) {
	t.Parallel()

	p := acme("acme", "")
	source, err := p.New(&executors.ProviderConfig{BaseURL: "http://acme.test"})
	require.NoError(t, err)
	ctx := context.Background()

	t.Run("ListActionsReturnsCopies", func(t *testing.T) {
		t.Parallel()

		defs, err := source.ListActions(ctx, executors.ExecContext{})
		require.NoError(t, err)
		require.Len(t, defs, 1)
		require.Equal(t, "greet", defs[0].ID)
		defs[0].Params[0] = 'X'
		defs[0].Recipients[0] = "changed"

		again, err := source.ListActions(ctx, executors.ExecContext{})
		require.NoError(t, err)
		require.JSONEq(t, `{"type":"object"}`, string(again[0].Params))
		require.Equal(t, []string{"name"}, again[0].Recipients)
	})

	t.Run("UnknownAction", func(t *testing.T) {
		t.Parallel()

		_, err := source.Execute(ctx, "nope", json.RawMessage(`{}`), executors.ExecContext{})
		require.ErrorIs(t, err, executors.ErrUnknownAction)
		e := executors.Classify(err)
		require.Equal(t, "unknown_action", e.Code)
		require.False(t, e.Retryable)
		require.Equal(t, `the acme source has no action "nope"`, e.Message)
	})

	t.Run("StrictParams", func(t *testing.T) {
		t.Parallel()

		for params, why := range map[string]string{
			`{"name":"ada","extra":1}`: `json: unknown field "extra"`,
			`{"name":"ada"} {}`:        "unexpected data after the JSON object",
			`["ada"]`:                  "params must be a JSON object",
			`null`:                     "params must be a JSON object",
			``:                         "params must be a JSON object",
			`{"name":""}`:              "name is required",
			`{"name":1}`:               "json: cannot unmarshal number into Go struct field greetParams.name of type string",
		} {
			_, err := source.Execute(ctx, "greet", json.RawMessage(params), executors.ExecContext{})
			var e *executors.Error
			require.ErrorAs(t, err, &e, params)
			require.Equal(t, "invalid_params", e.Code, params)
			require.False(t, e.Retryable, params)
			require.Equal(t, "invalid greet params: "+why, e.Message, params)
		}
	})

	t.Run("TokenScrubbedFromFailures", func(t *testing.T) {
		t.Parallel()

		for _, token := range []string{"tok-123", "tok/with?query&chars"} {
			_, err := source.Execute(ctx, "greet", json.RawMessage(`{"name":"leak"}`), executors.ExecContext{Token: token})
			require.Error(t, err)
			require.NotContains(t, err.Error(), token)
			require.Contains(t, err.Error(), executors.Redacted)
			require.Equal(t, "boom", executors.Classify(err).Code)
		}
	})

	t.Run("DuplicateActionPanics", func(t *testing.T) {
		t.Parallel()

		dup := acme("dup", "")
		dup.Actions = append(dup.Actions, dup.Actions[0])
		require.PanicsWithValue(t, "executors: provider dup defines action greet twice", func() {
			_, _ = dup.New(nil)
		})
	})

	t.Run("WrongConnection", func(t *testing.T) {
		t.Parallel()

		wrong := acme("wrong", "")
		wrong.Connect = func(*executors.ProviderConfig) (any, error) { return "not a connection", nil }
		s, err := wrong.New(nil)
		require.NoError(t, err)
		_, err = s.Execute(ctx, "greet", json.RawMessage(`{"name":"ada"}`), executors.ExecContext{})
		require.Error(t, err)
		require.True(t, strings.Contains(err.Error(), "runs on a *executors_test.acmeConn"), err.Error())
	})
}

func ExampleNewAction() {
	type params struct {
		Text string `json:"text"`
	}
	p := executors.Provider{
		ID: "echo",
		Actions: []executors.Action{executors.NewAction(executors.Definition{ID: "say", Tier: executors.TierR0},
			func(prefix string, _ context.Context, p *params, _ executors.ExecContext) (executors.Result, error) {
				return executors.Result{ProviderRef: prefix + p.Text}, nil
			})},
		Connect: func(*executors.ProviderConfig) (any, error) { return "> ", nil },
	}
	s, _ := p.New(nil)
	res, _ := s.Execute(context.Background(), "say", json.RawMessage(`{"text":"hi"}`), executors.ExecContext{})
	fmt.Println(res.ProviderRef)
	// Output: > hi
}
