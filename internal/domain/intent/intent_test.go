package intent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

func TestDiff_ByPath(t *testing.T) {
	d, err := intent.Diff(json.RawMessage(`{"a":1,"b":{"c":"x","d":[1,2]},"gone":true}`),
		json.RawMessage(`{"a":1,"b":{"c":"y","d":[1,3]},"new":"n"}`))
	require.NoError(t, err)
	got, err := json.Marshal(d)
	require.NoError(t, err)
	require.JSONEq(t, `[{"path":"/b/c","from":"x","to":"y"},{"path":"/b/d/1","from":2,"to":3},
		{"path":"/gone","from":true},{"path":"/new","to":"n"}]`, string(got))
	d, err = intent.Diff(json.RawMessage(`{"a":1.0}`), json.RawMessage(`{"a":1.0}`))
	require.NoError(t, err)
	require.Empty(t, d)
}

func TestKeepSealed_KeepsWhatTheApproverLeft(t *testing.T) {
	exact := json.RawMessage(`{"api_token":"s3cr3t-value","text":"hi","nested":{"password":"pw","n":1}}`)
	redacted := json.RawMessage(`{"api_token":"[REDACTED]","text":"hi","nested":{"password":"[REDACTED]","n":1}}`)
	edited := json.RawMessage(`{"api_token":"[REDACTED]","text":"changed","nested":{"password":"new-pw","n":1}}`)
	out, err := intent.KeepSealed(edited, redacted, exact)
	require.NoError(t, err)
	require.JSONEq(t, `{"api_token":"s3cr3t-value","text":"changed","nested":{"password":"new-pw","n":1}}`, string(out))
}

type tokens struct{ tok credential.Token }

func (f *tokens) Token(context.Context, dbutil.DB, credential.Request) (credential.Token, error) {
	return f.tok, nil
}

func TestComponents_ChangesAreNamed(t *testing.T) {
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	src := &catalog.Source{Source: stub{}, NeedsCredential: true}
	def := executors.Definition{ID: "send", Params: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
	ts := &tokens{tok: credential.Token{Value: "tok-A", Kind: "api_key"}}
	x := intent.New(&intent.Deps{MAC: box, Tokens: ts})
	in := &intent.Input{Org: "o", Action: catalog.Action{Source: src, Definition: def}, Params: json.RawMessage(`{"text":"hi"}`), Mode: "require_approval"}
	a, err := x.Components(context.Background(), in)
	require.NoError(t, err)
	raw, _ := json.Marshal(a)
	require.NotContains(t, string(raw), "tok-A", "no secret in the components")
	require.Len(t, a.Digest(), 64)

	// Same inputs, key order aside: same digest.
	in.Params = json.RawMessage(` { "text" : "hi" } `)
	same, err := x.Components(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, a.Digest(), same.Digest())

	// Another token, a redefined tool, other params: each is named.
	tok := credential.Token{Value: "tok-B", Kind: "api_key"}
	in.Token = &tok
	in.Action.Definition.Params = json.RawMessage(`{"type":"object","properties":{"text":{"type":"integer"}}}`)
	in.Params = json.RawMessage(`{"text":"bye"}`)
	b, err := x.Components(context.Background(), in)
	require.NoError(t, err)
	require.NotEqual(t, a.Digest(), b.Digest())
	require.Equal(t, []string{intent.ChangeDefinition, intent.ChangeParams, intent.ChangeCredential}, intent.Changes(&a, &b))

	// A broker's credential is its user's, without a fingerprint.
	bx := intent.New(&intent.Deps{MAC: box, Broker: true})
	c, err := bx.Components(context.Background(), &intent.Input{Org: "o", UserID: "u1", Action: catalog.Action{Source: src, Definition: def}, Params: json.RawMessage(`{}`), Token: &tok})
	require.NoError(t, err)
	require.Equal(t, intent.Credential{Via: "broker", User: "u1"}, c.Credential)
	require.Equal(t, "0123456789ab", intent.Prefix("0123456789abcdef"))
}

// A key rotation changes no intent while the key its fingerprints were
// made with is in the ring; once that key is removed, the recheck says so.
func TestComponents_KeyRotation(t *testing.T) {
	oldKey, newKey := secretbox.NewKey(), secretbox.NewKey()
	ring := func(keys ...secretbox.Key) *intent.Intents {
		box, err := secretbox.NewRing(keys)
		require.NoError(t, err)
		return intent.New(&intent.Deps{MAC: box, Tokens: &tokens{tok: credential.Token{Value: "tok-A", Kind: "api_key"}}})
	}
	src := &catalog.Source{Source: stub{}, NeedsCredential: true}
	in := &intent.Input{Org: "o", Action: catalog.Action{Source: src, Definition: executors.Definition{ID: "send", Params: json.RawMessage(`{}`)}},
		Params: json.RawMessage(`{"text":"hi"}`), Mode: "require_approval"}
	approved, err := ring(secretbox.Key{ID: "k1", Secret: oldKey}).Components(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, "k1", approved.Key)

	in.Key = approved.Key
	rotated := ring(secretbox.Key{ID: "k2", Secret: newKey}, secretbox.Key{ID: "k1", Secret: oldKey})
	again, err := rotated.Components(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, approved.Digest(), again.Digest(), "the old key is still in the ring")
	require.True(t, rotated.Current(&approved))

	removed := ring(secretbox.Key{ID: "k2", Secret: newKey})
	require.False(t, removed.Current(&approved))
	now, err := removed.Components(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, "k2", now.Key)
	require.Equal(t, []string{intent.ChangeKey}, intent.Changes(&approved, &now))
}

type stub struct{ executors.Source }

func (stub) ID() string { return "acme" }

// TestHidden_NamesWhereASecretChanged: a secret replaced by another shows
// no change in the redacted params; Hidden names its path with the
// redacted values only, and nothing the redacted params show already.
func TestHidden_NamesWhereASecretChanged(t *testing.T) {
	before := json.RawMessage(`{"channel":"C1","text":"key xoxb-1111","auth":{"user":"a","pass":"old"},"list":["x","sk-1"]}`)
	after := json.RawMessage(`{"channel":"C2","text":"key xoxb-2222","auth":{"user":"a","pass":"new"},"list":["x","sk-2"]}`)
	shownBefore := json.RawMessage(`{"channel":"C1","text":"key [REDACTED]","auth":"[REDACTED]","list":["x","[REDACTED]"]}`)
	shownAfter := json.RawMessage(`{"channel":"C2","text":"key [REDACTED]","auth":"[REDACTED]","list":["x","[REDACTED]"]}`)
	got, err := intent.Hidden(before, after, shownBefore, shownAfter)
	require.NoError(t, err)
	require.Equal(t, []intent.Change{
		{Path: "/auth", From: json.RawMessage(`"[REDACTED]"`), To: json.RawMessage(`"[REDACTED]"`)},
		{Path: "/list/1", From: json.RawMessage(`"[REDACTED]"`), To: json.RawMessage(`"[REDACTED]"`)},
		{Path: "/text", From: json.RawMessage(`"key [REDACTED]"`), To: json.RawMessage(`"key [REDACTED]"`)},
	}, got)
}

type endpointed struct {
	stub
	url string
}

func (e endpointed) Endpoint() string { return e.url }

// TestComponents_Endpoint: a source whose server its organization chose
// names it (keyed, never the URL itself); another server is a change. A
// source without one has no endpoint, so its digests are as they were.
func TestComponents_Endpoint(t *testing.T) {
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	x := intent.New(&intent.Deps{MAC: box})
	def := executors.Definition{ID: "send", Params: json.RawMessage(`{}`)}
	at := func(src executors.Source) intent.Components {
		c, err := x.Components(context.Background(), &intent.Input{Org: "o", Action: catalog.Action{Source: &catalog.Source{Source: src}, Definition: def},
			Params: json.RawMessage(`{}`), Mode: "require_approval"})
		require.NoError(t, err)
		return c
	}
	a, moved := at(endpointed{url: "https://mcp.example.com/a"}), at(endpointed{url: "https://mcp.example.com/b"})
	require.NotEmpty(t, a.Endpoint)
	raw, _ := json.Marshal(a)
	require.NotContains(t, string(raw), "mcp.example.com")
	require.Equal(t, []string{intent.ChangeEndpoint}, intent.Changes(&a, &moved))
	require.Empty(t, intent.Changes(&a, new(at(endpointed{url: "https://mcp.example.com/a"}))))

	plain := at(stub{})
	raw, _ = json.Marshal(plain)
	require.NotContains(t, string(raw), "endpoint")
}
