package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedact(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "TopLevel",
			in:   `{"token":"abc","user":"bob"}`,
			want: `{"token":"[REDACTED]","user":"bob"}`,
		},
		{
			name: "EveryKey",
			in:   `{"token":1,"secret":true,"password":null,"authorization":"Bearer x","api_key":"k","apikey":"k2"}`,
			want: `{"token":"[REDACTED]","secret":"[REDACTED]","password":"[REDACTED]","authorization":"[REDACTED]","api_key":"[REDACTED]","apikey":"[REDACTED]"}`,
		},
		{
			name: "CaseInsensitive",
			in:   `{"Authorization":"Basic eA==","API_KEY":"k","PassWord":"p","ApiKey":"a"}`,
			want: `{"Authorization":"[REDACTED]","API_KEY":"[REDACTED]","PassWord":"[REDACTED]","ApiKey":"[REDACTED]"}`,
		},
		{
			name: "Nested",
			in:   `{"a":{"b":{"c":{"secret":"s","keep":"k"}}}}`,
			want: `{"a":{"b":{"c":{"secret":"[REDACTED]","keep":"k"}}}}`,
		},
		{
			name: "InArrays",
			in:   `[{"token":"a"},[{"password":"b"}],"token"]`,
			want: `[{"token":"[REDACTED]"},[{"password":"[REDACTED]"}],"token"]`,
		},
		{
			name: "CompoundValueReplacedWhole",
			in:   `{"secret":{"nested":["x",{"y":1}]},"ok":1}`,
			want: `{"secret":"[REDACTED]","ok":1}`,
		},
		{
			name: "ExactKeyOnly",
			in:   `{"access_tokens":"a","tokens":5,"token_type":"bearer","my_password":"p"}`,
			want: `{"access_tokens":"a","tokens":5,"token_type":"bearer","my_password":"p"}`,
		},
		{
			name: "EscapedKeyName",
			in:   `{"tok\u0065n":"abc"}`,
			want: `{"token":"[REDACTED]"}`,
		},
		{
			name: "DuplicateKeysAllRedacted",
			in:   `{"token":"a","token":"b"}`,
			want: `{"token":"[REDACTED]","token":"[REDACTED]"}`,
		},
		{
			name: "NumbersPreserved",
			in:   `{"big":12345678901234567890123,"f":1.50,"e":1e400,"neg":-0.0,"token":3}`,
			want: `{"big":12345678901234567890123,"f":1.50,"e":1e400,"neg":-0.0,"token":"[REDACTED]"}`,
		},
		{
			name: "OrderAndWhitespace",
			in:   "{ \"z\" : 1,\n \"a\" : [ 1 , 2 ] }",
			want: `{"z":1,"a":[1,2]}`,
		},
		{
			name: "StringsKeepHTMLAndUnicode",
			in:   `{"s":"<a href=\"x\">é</a>\n\u0001"}`,
			want: `{"s":"<a href=\"x\">é</a>\n\u0001"}`,
		},
		{
			name: "Scalar",
			in:   `"token"`,
			want: `"token"`,
		},
		{
			name: "Empty",
			in:   "",
			want: `null`,
		},
		{
			name: "Invalid",
			in:   `{"token":"abc"`,
			want: `"[unparseable]"`,
		},
		{
			name: "TrailingData",
			in:   `{"a":1} {"token":"abc"}`,
			want: `"[unparseable]"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Redact(json.RawMessage(tt.in))
			require.Equal(t, tt.want, string(got))
			require.True(t, json.Valid(got))
		})
	}

	t.Run("InvalidUTF8Replaced", func(t *testing.T) {
		t.Parallel()
		got := Redact(json.RawMessage("{\"s\":\"a\xffb\"}"))
		require.Equal(t, `{"s":"a`+"\uFFFD"+`b"}`, string(got))
	})
}

// sensitiveLeaks returns the sensitive keys in doc whose value is not
// Redacted, walking doc with encoding/json's tokenizer rather than the
// package's own parser.
func sensitiveLeaks(t *testing.T, doc []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	var leaks []string
	var readValue func() bool
	readValue = func() bool {
		tok, err := dec.Token()
		require.NoError(t, err)
		switch tok := tok.(type) {
		case string:
			return tok == Redacted
		case json.Delim:
			switch tok {
			case '{':
				for dec.More() {
					key, err := dec.Token()
					require.NoError(t, err)
					redacted := readValue()
					for _, k := range []string{"token", "secret", "password", "authorization", "api_key", "apikey"} {
						if strings.EqualFold(key.(string), k) && !redacted {
							leaks = append(leaks, key.(string))
						}
					}
				}
			case '[':
				for dec.More() {
					readValue()
				}
			}
			_, err := dec.Token()
			require.NoError(t, err)
		}
		return false
	}
	readValue()
	return leaks
}

func TestRedactString(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{
			name:    "LiteralSecret",
			in:      "dial xoxb-123-456 failed; retry with xoxb-123-456",
			secrets: []string{"xoxb-123-456"},
			want:    "dial [REDACTED] failed; retry with [REDACTED]",
		},
		{
			name:    "ShortAndEmptySecretsIgnored",
			in:      "abc is fine",
			secrets: []string{"", "abc"},
			want:    "abc is fine",
		},
		{
			name:    "OverlappingSecretsMerge",
			in:      "value=ABCDEFGH end",
			secrets: []string{"ABCDEF", "DEFGH"},
			want:    "value=[REDACTED] end",
		},
		{
			name:    "RepeatedOverlappingOccurrences",
			in:      "aaaaaa",
			secrets: []string{"aaaa"},
			want:    "[REDACTED]",
		},
		{
			name: "KeyEqualsValue",
			in:   "GET /api?token=abc123&x=1 failed",
			want: "GET /api?token=[REDACTED]&x=1 failed",
		},
		{
			name: "KeyColonValue",
			in:   "bad config password: hunter2, retrying",
			want: "bad config password: [REDACTED], retrying",
		},
		{
			name: "KeySuffix",
			in:   "client_secret=s3cr3t access_token=t0k x-api-key: k3y",
			want: "client_secret=[REDACTED] access_token=[REDACTED] x-api-key: [REDACTED]",
		},
		{
			name: "CaseInsensitiveKey",
			in:   "API_KEY=zzz Secret:yyy",
			want: "API_KEY=[REDACTED] Secret:[REDACTED]",
		},
		{
			name: "QuotedValues",
			in:   `password="two words" secret='single q'`,
			want: `password="[REDACTED]" secret='[REDACTED]'`,
		},
		{
			name: "JSONFragment",
			in:   `upstream said {"error":"denied","token":"abc","api_key" : "k\"x","n":1}`,
			want: `upstream said {"error":"denied","token":"[REDACTED]","api_key" : "[REDACTED]","n":1}`,
		},
		{
			name: "JSONFragmentNonString",
			in:   `{"secret":12345}`,
			want: `{"secret":[REDACTED]}`,
		},
		{
			name: "EscapedJSONFragment",
			in:   `body: "{\"token\":\"abc def\",\"ok\":true}"`,
			want: `body: "{\"token\":\"[REDACTED]\",\"ok\":true}"`,
		},
		{
			name: "CutOffQuotedValue",
			in:   `{"password":"hunter2 and more`,
			want: `{"password":"[REDACTED]`,
		},
		{
			name: "Bearer",
			in:   "401 for header Bearer eyJhbGciOi.eyJzdWIi.sig-_x",
			want: "401 for header Bearer [REDACTED]",
		},
		{
			name: "BasicLowercase",
			in:   "sent basic dXNlcjpwYXNz== to server",
			want: "sent basic [REDACTED] to server",
		},
		{
			name: "AuthorizationHeader",
			in:   "Authorization: Bearer abc.def",
			want: "Authorization: Bearer [REDACTED]",
		},
		{
			name: "AlreadyRedacted",
			in:   `token=[REDACTED] "secret":"[REDACTED]" Bearer [REDACTED]`,
			want: `token=[REDACTED] "secret":"[REDACTED]" Bearer [REDACTED]`,
		},
		{
			name:    "PatternAndLiteralTogether",
			in:      "token=abc then abcdef leaked",
			secrets: []string{"abcdef"},
			want:    "token=[REDACTED] then [REDACTED] leaked",
		},
		{
			name: "NothingSensitive",
			in:   "connection refused (max_tokens: 5)",
			want: "connection refused (max_tokens: 5)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := RedactString(tt.in, tt.secrets...)
			require.Equal(t, tt.want, got)
			require.Equal(t, got, RedactString(got, tt.secrets...), "not idempotent")
		})
	}
}

func TestRedact_NULBecomesStorable(t *testing.T) {
	t.Parallel()
	out := Redact(json.RawMessage(`{"a":"x\u0000y","b\u0000":1}`))
	require.NotContains(t, string(out), `\u0000`)
	require.JSONEq(t, `{"a":"x\ufffdy","b\ufffd":1}`, string(out))
	require.Equal(t, string(out), string(Redact(out)), "idempotent")
}

func TestRedact_OAuthKeys(t *testing.T) {
	t.Parallel()
	out := Redact(json.RawMessage(`{"access_token":"a","Refresh_Token":"r","client_secret":"c","tokens_used":3}`))
	require.JSONEq(t, `{"access_token":"[REDACTED]","Refresh_Token":"[REDACTED]","client_secret":"[REDACTED]","tokens_used":3}`, string(out))
}
