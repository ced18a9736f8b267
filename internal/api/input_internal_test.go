package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/errs"
)

// TestCheckBodyText_Surrogates: a \u escape of half a surrogate pair
// without its other half is refused naming the field; whole pairs, escaped
// backslashes before a "u" and other escapes pass.
func TestCheckBodyText_Surrogates(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"text":"\ud83d\ude00"}`, `{"text":"\uD83D\uDE00 and \u00e9"}`, `{"text":"\\ud800"}`,
		`{"text":"\\\\ud800"}`, `{"text":"\"\ud800\udc00\""}`, `{"\ud83d\ude00":1}`, `{"text":"\u"}`,
	} {
		require.NoError(t, checkBodyText([]byte(body)), body)
	}
	for body, field := range map[string]string{
		`{"text":"\ud800"}`:                 "text",
		`{"text":"a\udc00b"}`:               "text",
		`{"text":"\ud83d\u0041"}`:           "text",
		`{"text":"\ud83d\ud83d\ude00"}`:     "text",
		`{"text":"\\\ud800"}`:               "text",
		`{"a":[{"b":"ok"},{"c":"\uDBFF"}]}`: "a[1].c",
		`{"params":{"\udfff":1}}`:           "params",
		`{"text":"\ude00\ud83d"}`:           "text",
	} {
		err := checkBodyText([]byte(body))
		var verr *errs.ValidationError
		require.ErrorAs(t, err, &verr, body)
		// A key is named after its object: params."\ufffd".
		require.True(t, strings.HasPrefix(verr.Fields[0].Field, field), "%s: %s", body, verr.Fields[0].Field)
		require.Contains(t, verr.Message, "half of a UTF-16 surrogate pair", body)
	}
}
