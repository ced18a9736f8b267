package policy

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()

	t.Run("SortsKeysAndCompacts", func(t *testing.T) {
		t.Parallel()
		got, err := CanonicalJSON(json.RawMessage(`{ "b": {"y":1,"x":[3,{"d":1,"c":2}]}, "a": "<é>" }`))
		require.NoError(t, err)
		require.Equal(t, `{"a":"<é>","b":{"x":[3,{"c":2,"d":1}],"y":1}}`, string(got))
	})

	t.Run("NumbersPreserved", func(t *testing.T) {
		t.Parallel()
		got, err := CanonicalJSON(json.RawMessage(`[1.0, 1e2, 123456789012345678901234567890]`))
		require.NoError(t, err)
		require.Equal(t, `[1.0,1e2,123456789012345678901234567890]`, string(got))
	})

	t.Run("DuplicateKeysLastWins", func(t *testing.T) {
		t.Parallel()
		got, err := CanonicalJSON(json.RawMessage(`{"a":1,"b":2,"a":3}`))
		require.NoError(t, err)
		require.Equal(t, `{"a":3,"b":2}`, string(got))
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		_, err := CanonicalJSON(json.RawMessage(`{"a":}`))
		require.ErrorIs(t, err, ErrInvalidJSON)
	})
}

func TestDefinitionHash(t *testing.T) {
	t.Parallel()

	const base = `{
		"type": "object",
		"description": "Post a message",
		"properties": {
			"channel": {"type": "string", "enum": ["general", "random"], "description": "Channel"},
			"text": {"type": "string", "default": "hi"},
			"description": {"type": "string", "description": "A property named description"},
			"opts": {"type": "object", "properties": {"enum": {"type": "boolean"}}}
		},
		"required": ["channel", "description"],
		"$defs": {"default": {"type": "integer", "default": 1}}
	}`

	hash := func(t *testing.T, schema string) string {
		t.Helper()
		h, err := DefinitionHash(json.RawMessage(schema))
		require.NoError(t, err)
		require.Len(t, h, 64)
		return h
	}
	baseHash := hash(t, base)

	t.Run("KeyOrderIrrelevant", func(t *testing.T) {
		t.Parallel()
		reordered := `{"$defs":{"default":{"default":1,"type":"integer"}},"required":["channel","description"],
			"properties":{"opts":{"properties":{"enum":{"type":"boolean"}},"type":"object"},
			"description":{"description":"A property named description","type":"string"},
			"text":{"default":"hi","type":"string"},
			"channel":{"description":"Channel","enum":["general","random"],"type":"string"}},
			"description":"Post a message","type":"object"}`
		require.Equal(t, baseHash, hash(t, reordered))
	})

	t.Run("VolatileKeywordsIgnored", func(t *testing.T) {
		t.Parallel()
		changed := `{
			"type": "object",
			"description": "Send a message (reworded)",
			"properties": {
				"channel": {"type": "string", "enum": ["general", "random", "new-channel"]},
				"text": {"type": "string", "default": "hello", "description": "added"},
				"description": {"type": "string"},
				"opts": {"type": "object", "properties": {"enum": {"type": "boolean", "description": "x"}}}
			},
			"required": ["channel", "description"],
			"$defs": {"default": {"type": "integer", "default": 2}}
		}`
		require.Equal(t, baseHash, hash(t, changed))
	})

	t.Run("TypeChangeChangesHash", func(t *testing.T) {
		t.Parallel()
		changed := `{"type":"object","properties":{"channel":{"type":"integer"},"text":{"type":"string"},
			"description":{"type":"string"},"opts":{"type":"object","properties":{"enum":{"type":"boolean"}}}},
			"required":["channel","description"],"$defs":{"default":{"type":"integer"}}}`
		require.Equal(t, baseHash, hash(t, `{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"},
			"description":{"type":"string"},"opts":{"type":"object","properties":{"enum":{"type":"boolean"}}}},
			"required":["channel","description"],"$defs":{"default":{"type":"integer"}}}`))
		require.NotEqual(t, baseHash, hash(t, changed))
	})

	t.Run("PropertyNamedDescriptionKept", func(t *testing.T) {
		t.Parallel()
		without := `{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"},
			"opts":{"type":"object","properties":{"enum":{"type":"boolean"}}}},
			"required":["channel","description"],"$defs":{"default":{"type":"integer"}}}`
		require.NotEqual(t, baseHash, hash(t, without))
	})

	t.Run("NestedPropertyNamedEnumKept", func(t *testing.T) {
		t.Parallel()
		without := `{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"},
			"description":{"type":"string"},"opts":{"type":"object","properties":{}}},
			"required":["channel","description"],"$defs":{"default":{"type":"integer"}}}`
		require.NotEqual(t, baseHash, hash(t, without))
	})

	t.Run("DefinitionNamedDefaultKept", func(t *testing.T) {
		t.Parallel()
		without := `{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"},
			"description":{"type":"string"},"opts":{"type":"object","properties":{"enum":{"type":"boolean"}}}},
			"required":["channel","description"],"$defs":{}}`
		require.NotEqual(t, baseHash, hash(t, without))
	})

	t.Run("KeywordsInsideCombinatorsStripped", func(t *testing.T) {
		t.Parallel()
		require.Equal(t,
			hash(t, `{"anyOf":[{"type":"string","description":"a"},{"type":"null","default":null}],"items":{"enum":[1]}}`),
			hash(t, `{"anyOf":[{"type":"string"},{"type":"null"}],"items":{}}`))
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		_, err := DefinitionHash(json.RawMessage(`not json`))
		require.ErrorIs(t, err, ErrInvalidJSON)
	})
}
