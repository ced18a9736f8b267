package policy

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

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
			name: "DescriptiveKeysKept",
			in:   `{"access_tokens":"a","tokens":5,"max_tokens":9,"token_type":"bearer","session_id":"s","secret_name":"n","key":"ENG"}`,
			want: `{"access_tokens":"a","tokens":5,"max_tokens":9,"token_type":"bearer","session_id":"s","secret_name":"n","key":"ENG"}`,
		},
		{
			name: "KeyFamily",
			in:   `{"my_password":"p","x-api-key":"k","accessToken":"t","set-cookie":"c","credentials":{"u":"v"}}`,
			want: `{"my_password":"[REDACTED]","x-api-key":"[REDACTED]","accessToken":"[REDACTED]","set-cookie":"[REDACTED]","credentials":"[REDACTED]"}`,
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
			in:      "value=AB12CD34EF56 end",
			secrets: []string{"AB12CD34", "CD34EF56"},
			want:    "value=[REDACTED] end",
		},
		{
			name:    "RepeatedOverlappingOccurrences",
			in:      "a1a1a1a1a1a1",
			secrets: []string{"a1a1a1a1"},
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
			in:      "token=abc then abcdef12 leaked",
			secrets: []string{"abcdef12"},
			want:    "token=[REDACTED] then [REDACTED] leaked",
		},
		{
			name:    "BearerFormOfSecret",
			in:      "upstream: invalid credentials sk-live-12345 (sent Bearer sk-live-12345)",
			secrets: []string{"Bearer sk-live-12345"},
			want:    "upstream: invalid credentials [REDACTED] (sent Bearer [REDACTED])",
		},
		{
			name: "TokenFormatWithoutKey",
			in:   "echo: got xoxb-1111-2222-abcdefgh from you",
			want: "echo: got [REDACTED] from you",
		},
		{
			name: "FamilyKeys",
			in:   "passwd=hunter2 pwd: x1 Cookie: sid=abc privateKey=k clientSecret=c",
			want: "passwd=[REDACTED] pwd: [REDACTED] Cookie: [REDACTED] privateKey=[REDACTED] clientSecret=[REDACTED]",
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

// jsonb refuses a number with more than 131072 digits before the point or
// 16383 after ("value overflows numeric format"); each storable case
// below was stored, and each other one refused, by Postgres 15.
func TestRedact_NumbersJSONBCannotHoldBecomeText(t *testing.T) {
	t.Parallel()
	storable := []string{"0", "-1.5E+3", "1e131071", "12e131070", "0.5e131072", "1e-16383", "0.5e-16382",
		"1.5e-16382", "0e-16383", "0e131073", "-0.0e999999", strings.Repeat("9", 20000), "0." + strings.Repeat("1", 16383)}
	refused := []string{"1e999999", "0e-99999", "1e131072", "12e131071", "1e-16384", "0.5e-16383", "0e-16384",
		"-1e131072", "1e99999999999999999999", "0." + strings.Repeat("1", 16384), "1" + strings.Repeat("0", 131072)}
	for _, n := range storable {
		require.True(t, jsonbNumber(n), n)
		doc := `{"n":[` + n + `]}`
		require.True(t, StorableAsWritten([]byte(doc)), doc)
		require.Equal(t, doc, string(Redact(json.RawMessage(doc))), "kept as written")
	}
	for _, n := range refused {
		require.False(t, jsonbNumber(n), n)
		require.False(t, StorableAsWritten([]byte(`{"a":1,"n":[2,`+n+`]}`)), n)
		out := Redact(json.RawMessage(`{"n":[` + n + `]}`))
		require.Equal(t, `{"n":["`+n+`"]}`, string(out), "kept as its text")
		require.Equal(t, string(out), string(Redact(out)), "idempotent")
		padded := Redact(json.RawMessage(`{"n":` + n + `,"pad":"` + strings.Repeat("x", 2*MinTruncateBytes) + `"}`))
		cut := Truncate(padded, MinTruncateBytes)
		require.True(t, json.Valid(cut), "measured as a string")
		require.LessOrEqual(t, len(cut), MinTruncateBytes)
	}
}

// StorableAsWritten: what jsonb holds as written, which Redact keeps as
// it is (but for secrets).
func TestStorableAsWritten(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{`{}`, `null`, ` [1, "a", {"b": [true, -1.5E+3]}] `, `"1e999999"`, `["\\u0000"]`, `{"k":"\u0001"}`} {
		require.True(t, StorableAsWritten([]byte(doc)), doc)
		require.JSONEq(t, doc, string(Redact(json.RawMessage(doc))), doc)
	}
	for _, doc := range []string{`["x\u0000y"]`, `{"k\u0000":1}`, `{"a":{"b":[0e-99999]}}`, `1e999999`, `{"a":`, ``, `[1,]`} {
		require.False(t, StorableAsWritten([]byte(doc)), doc)
	}
}

func TestRedactString_StorableText(t *testing.T) {
	t.Parallel()
	got := RedactString("no\x00such \xffissue token=hunter22", "hunter22")
	require.Equal(t, "no\uFFFDsuch \uFFFDissue token=[REDACTED]", got)
	require.Equal(t, got, RedactString(got), "idempotent")
}

func TestRedact_OAuthKeys(t *testing.T) {
	t.Parallel()
	out := Redact(json.RawMessage(`{"access_token":"a","Refresh_Token":"r","client_secret":"c","tokens_used":3}`))
	require.JSONEq(t, `{"access_token":"[REDACTED]","Refresh_Token":"[REDACTED]","client_secret":"[REDACTED]","tokens_used":3}`, string(out))
}

func TestIsSensitiveKey(t *testing.T) {
	t.Parallel()

	sensitive := []string{
		// The spec's six.
		"token", "secret", "password", "authorization", "api_key", "apikey",
		// Case, separators and camelCase.
		"TOKEN", "Api-Key", "API_KEY", "apiKey", "APIKey", "ApiKey", "x-api-key", "X-API-KEY",
		"accessToken", "access_token", "AccessToken", "auth_token", "authToken", "id_token", "refresh_token",
		"github_token", "GITHUB_TOKEN", "slack_token", "bot_token", "sessionToken", "session_token", "oauth2_token", "token2",
		"clientSecret", "client_secret", "secret_key", "secretKey", "aws_secret_access_key", "SECRET",
		"privateKey", "private_key", "PRIVATE-KEY", "access_key", "signing_key", "masterKey",
		"passwd", "pwd", "db_pwd", "user.password", "my_password", "newPassword", "passphrase",
		"bearer", "Bearer", "Proxy-Authorization", "jwt", "JWT", "id_jwt",
		"cookie", "Cookie", "cookies", "set-cookie", "Set-Cookie",
		"credential", "credentials", "Credentials", "aws.credentials",
		"session", "user_session",
		// Near misses users expect.
		"apiKey", "api_key", "x-api-key", "client_secret", "privateKey", "private_key", "passphrase",
		"auth", "basicAuth", "proxy_auth", "authorization", "credentials", "session_token", "access_key", "secret_key",
		"pwd", "pass", "user_pass", "passwd", "dsn", "sentry_dsn", "connection_string", "connectionString", "conn_str",
		"signing_key", "webhook_secret", "refresh_token", "secrets", "passwords", "api_keys", "otp",
	}
	for _, k := range sensitive {
		require.True(t, isSensitiveKey(k), "%q must be redacted", k)
	}

	kept := []string{
		"", "_", "123", "user", "text", "channel", "key", "keys", "monkey", "id", "name",
		// They describe a secret or count language-model tokens; they do not
		// hold one.
		"session_id", "sessionId", "SessionID", "session_ids", "sessions",
		"tokens", "max_tokens", "maxTokens", "tokens_used", "input_tokens", "access_tokens",
		"token_type", "tokenType", "token_id", "token_expires_at", "expires_in",
		"secret_name", "secretName", "password_hint", "passwordPolicy", "api_key_id", "apiKeyName",
		"authorization_url", "cookie_policy", "credential_id", "jwt_algorithm", "keyboard", "turkey",
		"author", "authority", "bearing", "pwdx",
		"token_count", "tokenCount", "passenger", "bypass", "compass", "auth_url", "auth_type", "authorized",
		"dsn_host", "passes", "otp_length",
	}
	for _, k := range kept {
		require.False(t, isSensitiveKey(k), "%q must not be redacted", k)
	}
}

func TestKeyWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"accessToken":       {"access", "token"},
		"APIKey":            {"api", "key"},
		"x-api-key":         {"x", "api", "key"},
		"OAuth2Token":       {"o", "auth", "token"},
		"HTTPServerURL":     {"http", "server", "url"},
		"set_cookie":        {"set", "cookie"},
		"ÉtéPassword":       {"été", "password"},
		"--":                nil,
		"aws.secret_Access": {"aws", "secret", "access"},
	} {
		require.Equal(t, want, keyWords(in), in)
	}
}

func TestRedact_TokenFormats(t *testing.T) {
	t.Parallel()

	const (
		slack     = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp"
		ghp       = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
		pat       = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"
		jwt       = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
		pemKey    = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0\n-----END RSA PRIVATE KEY-----"
		basicUP   = "dXNlcjpodW50ZXIy" // user:hunter2
		openai    = "sk-" + "T3BlbkFJabcdefghijklmnopqrstuvwxyz0123456789AB"
		project   = "sk-proj-" + "Ab3_cD4-eF5gH6iJ7kL8mN9oP0qR1sT2uV3wX4yZ5"
		anthropic = "sk-ant-api03-" + "AbCdEf0123456789_-AbCdEf0123456789AbCdEf0123456789-AA"
		akia      = "AKIAIOSFODNN7EXAMPLE"
		asia      = "ASIAY34FZKBOKMUTVV7A"
		awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	)
	tests := []struct {
		name string
		in   string // a string value
		want string
		// prose is text RedactString scrubs more eagerly than Redact.
		prose bool
	}{
		{"Slack", "posting with " + slack + " now", "posting with [REDACTED] now", false},
		{"SlackUser", "xoxp-2222-3333-abcd", "[REDACTED]", false},
		{"GitHubClassic", "clone https://" + ghp + "@github.com/x/y", "clone https://[REDACTED]@github.com/x/y", false},
		{"GitHubOthers", "gho_abcdefghij0123456789 ghu_abcdefghij0123456789 ghs_abcdefghij0123456789 ghr_abcdefghij0123456789",
			"[REDACTED] [REDACTED] [REDACTED] [REDACTED]", false},
		{"GitHubFineGrained", "token " + pat + ".", "token [REDACTED].", false},
		{"JWT", "session " + jwt + " expired", "session [REDACTED] expired", false},
		{"JWTAlgNone", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "[REDACTED]", false},
		{"PEM", "key:\n" + pemKey + "\nthanks", "key:\n[REDACTED]\nthanks", false},
		{"PEMCutOff", "key: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "key: [REDACTED]", false},
		{"AuthorizationHeaderInText", "curl -H 'Authorization: Bearer abc123def456' https://x", "curl -H 'Authorization: Bearer [REDACTED]' https://x", false},
		{"BearerLong", "bearer AbCdEfGhIjKlMnOpQrStUv", "bearer [REDACTED]", false},
		{"BasicCredentials", "Authorization: Basic " + basicUP, "Authorization: Basic [REDACTED]", false},
		// Ordinary prose is left alone.
		{"BearerProse", "the bearer of bad news; Bearer tokens expire", "the bearer of bad news; Bearer tokens expire", true},
		{"BasicProse", "basic support and Basic example", "basic support and Basic example", true},
		{"ShortPrefixes", "xoxb- gh_ ghp_short eyJ. github_pat_x", "xoxb- gh_ ghp_short eyJ. github_pat_x", false},
		{"PublicKey", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", false},
		// What users expect redacted besides.
		{"OpenAI", "key " + openai + " rejected", "key [REDACTED] rejected", false},
		{"OpenAIProject", "OPENAI_API_KEY_HINT " + project, "OPENAI_API_KEY_HINT [REDACTED]", false},
		{"Anthropic", "(" + anthropic + ")", "([REDACTED])", false},
		{"AWSAccessKeyIDs", akia + "," + asia, "[REDACTED],[REDACTED]", false},
		{"AWSSecretINI", "[default]\naws_access_key_id = " + akia + "\naws_secret_access_key = " + awsSecret + "\n",
			"[default]\naws_access_key_id = [REDACTED]\naws_secret_access_key = [REDACTED]\n", false},
		{"URLPassword", "dial postgres://app:Sup3r-secret@db.internal:5432/x failed", "dial postgres://app:[REDACTED]@db.internal:5432/x failed", false},
		{"URLPasswordWithAt", "redis://:p@ss@cache:6379/0", "redis://:[REDACTED]@cache:6379/0", false},
		{"URLPasswordJSONQuoted", `{"url":"https://u:pw@h/"}`, `{"url":"https://u:[REDACTED]@h/"}`, false},
		{"QueryPassword", "GET /login?user=ada&password=hunter2&next=/", "GET /login?user=ada&password=[REDACTED]&next=/", false},
		{"DSN", "host=db user=app password=hunter2 dbname=x sslmode=disable", "host=db user=app password=[REDACTED] dbname=x sslmode=disable", false},
		{"DSNQuoted", "password='two words' pwd=\"q\\\"x\" passwd=abc", "password='[REDACTED]' pwd=\"[REDACTED]\" passwd=[REDACTED]", false},
		{"SecretAndPass", "client_secret=abc&pass=xyz&secret=s", "client_secret=[REDACTED]&pass=[REDACTED]&secret=[REDACTED]", false},
		{"JSONAsText", `called with {"user":"ada","password":"hunter2","pin":"1234","api_key":12345}`,
			`called with {"user":"ada","password":"[REDACTED]","pin":"1234","api_key":[REDACTED]}`, false},
		{"EscapedJSONAsText", `args: {\"x-api-key\":\"k1\",\"n\":1}`, `args: {\"x-api-key\":\"[REDACTED]\",\"n\":1}`, false},
		// Near misses of those are kept.
		{"Slugs", "sk-folding-cube-animation-wrapper task-1234567890abcdefghijklmn", "sk-folding-cube-animation-wrapper task-1234567890abcdefghijklmn", false},
		{"ShortSk", "sk-abc123", "sk-abc123", false},
		{"NotAKeyID", "AKIA1234 AKIAIOSFODNN7EXAMPLEXX", "AKIA1234 AKIAIOSFODNN7EXAMPLEXX", false},
		{"URLWithoutPassword", "http://host:8080/path@x https://user@host/ mailto:a:b@c", "http://host:8080/path@x https://user@host/ mailto:a:b@c", false},
		{"DescriptiveKeys", "max_tokens=5 token_count=3 author=ada bypass=1 passenger=2 keyboard=us", "max_tokens=5 token_count=3 author=ada bypass=1 passenger=2 keyboard=us", false},
		// RedactString, more eager, takes "= nil" for a value.
		{"Comparisons", "if token == nil || password != x", "if token == nil || password != x", true},
		{"DescriptiveJSONKeys", `{"max_tokens":5,"token_type":"bearer","author":"ada"}`, `{"max_tokens":5,"token_type":"bearer","author":"ada"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := json.Marshal(map[string]any{"text": tt.in, "list": []string{tt.in}})
			require.NoError(t, err)
			want, err := json.Marshal(map[string]any{"text": tt.want, "list": []string{tt.want}})
			require.NoError(t, err)
			got := Redact(in)
			require.JSONEq(t, string(want), string(got))
			require.Equal(t, string(got), string(Redact(got)), "not idempotent")
			if !tt.prose {
				require.Equal(t, tt.want, RedactString(tt.in))
			}
		})
	}
}

func TestRedact_Secrets(t *testing.T) {
	t.Parallel()

	const secret = "s3cr3t-Value/with+chars"
	tests := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{
			name:    "AnyKeyAnyDepth",
			in:      `{"message":"invalid token s3cr3t-Value/with+chars","data":{"list":["x s3cr3t-Value/with+chars y"]}}`,
			secrets: []string{secret},
			want:    `{"message":"invalid token [REDACTED]","data":{"list":["x [REDACTED] y"]}}`,
		},
		{
			name:    "InKeys",
			in:      `{"s3cr3t-Value/with+chars":1}`,
			secrets: []string{secret},
			want:    `{"[REDACTED]":1}`,
		},
		{
			name:    "BearerFormGiven",
			in:      `{"error":"rejected Bearer s3cr3t-Value/with+chars and s3cr3t-Value/with+chars"}`,
			secrets: []string{"Bearer " + secret},
			want:    `{"error":"rejected Bearer [REDACTED] and [REDACTED]"}`,
		},
		{
			name:    "QueryEscapedForm",
			in:      `{"url":"https://x/cb?key=s3cr3t-Value%2Fwith%2Bchars&a=1"}`,
			secrets: []string{secret},
			want:    `{"url":"https://x/cb?key=[REDACTED]&a=1"}`,
		},
		{
			name:    "JSONEscapedFormInsideAString",
			in:      `{"body":"{\"auth\":\"pa\\\"ss\\\\word\"}"}`,
			secrets: []string{`pa"ss\word`},
			want:    `{"body":"{\"auth\":\"[REDACTED]\"}"}`,
		},
		{
			name:    "SeveralSecrets",
			in:      `{"a":"old-credential then new-credential"}`,
			secrets: []string{"old-credential", "new-credential", ""},
			want:    `{"a":"[REDACTED] then [REDACTED]"}`,
		},
		{
			name:    "ShortSecretsIgnored",
			in:      `{"a":"a b abc"}`,
			secrets: []string{"a", "abc", " "},
			want:    `{"a":"a b abc"}`,
		},
		{
			name:    "NumbersAndKeysUntouched",
			in:      `{"n":12345678,"ok":true}`,
			secrets: []string{"12345678", "true"},
			want:    `{"n":12345678,"ok":true}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Redact(json.RawMessage(tt.in), tt.secrets...)
			require.Equal(t, tt.want, string(got))
			require.Equal(t, string(got), string(Redact(got, tt.secrets...)), "not idempotent")
		})
	}
}

func TestScrubbable(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"hunter22", "s3cr3t-x", "demo-key", "pw-planted-5521x", "correcthorsebatterystaple", "1234567890123456",
		"xoxb-1-2-3", "opaque-credential-8f3k2q", "a1a1a1a1",
	} {
		require.True(t, scrubbable(s), "%q could be a credential", s)
	}
	for _, s := range []string{
		"", "demo", "test", "hunter2", "abc-123", "password", "changeme", "Production", "12345678", "outboxdoutboxd",
	} {
		require.False(t, scrubbable(s), "%q is too short or too plain to look for", s)
	}
	// Not looked for, so the ordinary word survives.
	require.Equal(t, "this is a demo of outboxd", RedactString("this is a demo of outboxd", "demo"))
	require.JSONEq(t, `{"text":"this is a demo of outboxd"}`, string(Redact(json.RawMessage(`{"text":"this is a demo of outboxd"}`), "demo", "Bearer demo")))
}

// TestRedact_SecretForms: a given secret is found raw and in the encodings
// it travels in, wherever it sits inside them.
func TestRedact_SecretForms(t *testing.T) {
	t.Parallel()
	const secret = "Zx9-pl<a>nt&ed/secret+42"
	doc := func(prefix string) string { return prefix + `{"echo":"` + secret + `"}` }
	forms := map[string]string{
		"JSONEscapedHTML": `{"echo":"Zx9-pl\u003ca\u003ent\u0026ed/secret+42"}`,
		"QueryEscaped":    "q=" + url.QueryEscape(secret),
		"PathEscaped":     "/v1/" + url.PathEscape(secret) + "/x",
		"Hex":             "0x" + hex.EncodeToString([]byte(secret)),
		"HexUpper":        strings.ToUpper(hex.EncodeToString([]byte("ab" + secret))),
		"Base64":          base64.StdEncoding.EncodeToString([]byte(doc(""))),
		"Base64Offset1":   base64.StdEncoding.EncodeToString([]byte(doc("x"))),
		"Base64Offset2":   base64.StdEncoding.EncodeToString([]byte(doc("xy"))),
		"Base64URL":       base64.URLEncoding.EncodeToString([]byte(doc("?"))),
		"Base64Raw":       base64.RawStdEncoding.EncodeToString([]byte(secret)),
		"Basic":           "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+secret)),
	}
	for name, text := range forms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			decoded := func(s string) string {
				for _, dec := range []func(string) ([]byte, error){
					hex.DecodeString, base64.StdEncoding.DecodeString, base64.URLEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
				} {
					if b, err := dec(s); err == nil {
						return string(b)
					}
				}
				return s
			}
			// The test's own check that the form holds the secret.
			require.True(t, strings.Contains(text, secret) || strings.Contains(decoded(strings.TrimPrefix(strings.TrimPrefix(text, "0x"), "Authorization: Basic ")), secret) ||
				strings.Contains(text, url.QueryEscape(secret)) || strings.Contains(text, url.PathEscape(secret)) || strings.Contains(text, `\u003c`), text)
			if name != "Basic" {
				require.Equal(t, text, RedactString(text), "found only as the given secret")
			}
			got := RedactString(text, secret)
			require.Contains(t, got, Redacted)
			// At most a character on each side of the marker (less than a
			// byte of the secret each) is left of the encoded secret.
			for _, piece := range strings.Split(got, Redacted) {
				require.NotContains(t, decoded(piece), "secret")
			}
			in, err := json.Marshal(map[string]string{"v": text})
			require.NoError(t, err)
			out := Redact(in, secret)
			require.Contains(t, string(out), Redacted)
			require.Equal(t, string(out), string(Redact(out, secret)), "not idempotent")
		})
	}
}

func TestSecretValues(t *testing.T) {
	t.Parallel()
	got := SecretValues(json.RawMessage(`{
		"user":"ada","password":"pw-planted-5521x","pin":"1234",
		"auth":{"user":"bob","token":"tok-0123456789","n":123456789012345678},
		"list":[{"client_secret":"short"}],
		"url":"postgres://app:Db-pass-9911@db/x",
		"note":"use sk-proj-Ab3cD4eF5gH6iJ7kL8mN9oP0 and password=hunter22 here",
		"max_tokens":123456789012
	}`))
	require.ElementsMatch(t, []string{
		"pw-planted-5521x", "tok-0123456789", "123456789012345678", "Db-pass-9911",
		"sk-proj-Ab3cD4eF5gH6iJ7kL8mN9oP0", "hunter22",
	}, got, "bob, short and 1234 are too short or plain to look for")
	require.Nil(t, SecretValues(json.RawMessage(`{"a":`)))
	require.Empty(t, SecretValues(json.RawMessage(`{"text":"nothing secret","max_tokens":5}`)))

	// What SecretValues finds, Redact replaces.
	doc := json.RawMessage(`{"password":"pw-planted-5521x","note":"password=hunter22"}`)
	redacted := Redact(doc)
	for _, v := range SecretValues(doc) {
		require.NotContains(t, string(redacted), v)
	}
}

// TestErrorText: a stored error is scrubbed, then cut to MaxErrorBytes on
// a character boundary, saying how much was cut.
func TestErrorText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short [REDACTED]", ErrorText("short s3cr3t-0123456789abcdef", "s3cr3t-0123456789abcdef"))

	long := strings.Repeat("é", MaxErrorBytes) + " secret s3cr3t-0123456789abcdef"
	got := ErrorText(long, "s3cr3t-0123456789abcdef")
	require.LessOrEqual(t, len(got), MaxErrorBytes)
	require.True(t, utf8.ValidString(got))
	require.Contains(t, got, "more bytes cut)")
	require.NotContains(t, got, "s3cr3t")
	kept, _, _ := strings.Cut(got, " … (")
	require.Equal(t, long[:len(kept)], kept)
	require.Contains(t, got, strconv.Itoa(len(RedactString(long, "s3cr3t-0123456789abcdef"))-len(kept))+" more bytes cut")

	// A secret across the cut is scrubbed first, so no part of it is kept.
	secret := strings.Repeat("k", 100)
	across := strings.Repeat("a", MaxErrorBytes-60) + secret
	require.NotContains(t, ErrorText(across, secret), "kkkkkkkkkk")
}
