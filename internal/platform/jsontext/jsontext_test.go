package jsontext_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/jsontext"
)

// Problem names the field that holds text Postgres cannot store, at any
// depth, and passes what it can (and what is not JSON, for the decoder).
func TestProblem(t *testing.T) {
	for body, want := range map[string][2]string{
		`{"channel":"C1","text":"fine \u00e9 \ud83d\ude00"}`: {"", ""},
		`{"channel":"C1\u0000"}`:                             {"channel", "channel contains a NUL character"},
		`{"a":[{"b":"ok"},{"c":"\ud800"}]}`:                  {"a[1].c", "a[1].c contains \\ud800, half of a UTF-16 surrogate pair without its other half"},
		"{\"text\":\"\xff\"}":                                {"text", "text is not valid UTF-8"},
		`{not json`:                                          {"", ""},
	} {
		field, problem := jsontext.Problem([]byte(body))
		require.Equal(t, want, [2]string{field, problem}, body)
	}
}

// IdentifierProblem refuses what Postgres cannot store and control
// characters, and passes any other text.
func TestIdentifierProblem(t *testing.T) {
	for s, want := range map[string]string{
		"order-42 ключ 😀": "",
		"a\x00b":          "contains a NUL character",
		"a\xffb":          "is not valid UTF-8",
		"a\nb":            "contains a control character",
		"a\x7fb":          "contains a control character",
	} {
		require.Equal(t, want, jsontext.IdentifierProblem(s), "%q", s)
	}
}
