package policy

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var fuzzDocs = []string{
	``,
	`null`,
	`{"token":"abc","user":{"Password":["x",{"secret":1}]},"list":[{"apikey":null}]}`,
	`[1,2.50,1e400,-0,"token",{"API_KEY":{"a":[true,false]}}]`,
	`{"tok\u0065n":"x","a":"\ud83d\ude00\u0000<>&"}`,
	`{"a":1,"a":2,"Authorization":"Bearer x","authorization":"y"}`,
	"{\"s\":\"\xff\xfe\"}",
	`{"_truncated":false,"value":[[[[{"deep":"` + strings.Repeat("d", 300) + `"}]]]]}`,
	`"` + strings.Repeat("日本語", 100) + `"`,
	`123456789012345678901234567890`,
	`{"a":`,
	`{"a":1} x`,
	`{"x-api-key":"k","accessToken":"t","session_id":"s","max_tokens":5,"Set-Cookie":["a"]}`,
	`{"msg":"Authorization: Bearer abc123def456 xoxb-1234-5678-abcdef ghp_abcdefghij0123456789ABCD"}`,
	`["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig","-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----"]`,
	`{"xoxp-1111-2222-key":{"Basic dXNlcjpwYXNz":1}}`,
	`{"k":"sk-proj-Ab3cD4eF5gH6iJ7kL8mN9oP0 sk-ant-api03-AbCdEf0123456789_-AbCd AKIAIOSFODNN7EXAMPLE"}`,
	`["postgres://app:p@ss@db:5432/x","redis://:pw@h","http://h:80/a@b"]`,
	`{"q":"a=1&password=x&pwd='y z'&secret=\"s\" host=db passwd=[REDACTED]"}`,
	`{"t":"echo {\"password\":\"hunter2\",\"api_key\":123,\"n\":1} {\\\"token\\\":\\\"x\\\"}"}`,
	`{"apiKey":"a","auth":"b","pass":"c","dsn":"d","connection_string":"e","author":"f","passenger":"g","token_count":1}`,
}

// redactReference is an independent walk over encoding/json's generic
// decoding, used to check Redact's own parser and tree walk; it shares the
// string scrubbing.
func redactReference(v any) any {
	scrub := func(s string) string {
		return strings.ReplaceAll(newScrubber(nil).scrub(s, nil), "\x00", "\uFFFD")
	}
	switch v := v.(type) {
	case string:
		return scrub(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			k2 := scrub(k)
			if isSensitiveKey(k) {
				out[k2] = Redacted
			} else {
				out[k2] = redactReference(val)
			}
		}
		return out
	case []any:
		for i := range v {
			v[i] = redactReference(v[i])
		}
	}
	return v
}

func decodeNumbers(t *testing.T, doc []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

func FuzzRedact(f *testing.F) {
	for _, doc := range fuzzDocs {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		out := Redact(doc)
		require.True(t, json.Valid(out), "invalid output %q", out)
		if isBlank(doc) {
			require.Equal(t, "null", string(out))
			return
		}
		if !json.Valid(doc) {
			require.Equal(t, unparseable, string(out))
			return
		}
		require.Empty(t, sensitiveLeaks(t, out))
		require.Equal(t, string(out), string(Redact(out)), "not idempotent")
		require.Equal(t, redactReference(decodeNumbers(t, doc)), decodeNumbers(t, out))
	})
}

func FuzzTruncate(f *testing.F) {
	for _, doc := range fuzzDocs {
		for _, limit := range []uint16{0, 64, 100, 1000} {
			f.Add([]byte(doc), limit)
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte, limit uint16) {
		out := Truncate(doc, int(limit))
		require.True(t, json.Valid(out), "invalid output %q", out)
		require.LessOrEqual(t, len(out), max(int(limit), MinTruncateBytes))
		if isBlank(doc) {
			require.Equal(t, "null", string(out))
			return
		}
		var compact bytes.Buffer
		if json.Compact(&compact, doc) == nil && compact.Len() <= max(int(limit), MinTruncateBytes) {
			if !bytes.Equal(out, doc) {
				require.Equal(t, compact.String(), string(out))
			}
			return
		}
		// UseNumber: a kept literal such as 1e700 is valid JSON but no
		// float64.
		decoded, ok := decodeNumbers(t, out).(map[string]any)
		require.True(t, ok, "truncated output is not an object: %s", out)
		require.Equal(t, true, decoded["_truncated"])
	})
}

func FuzzRedactString(f *testing.F) {
	f.Add("token=abc password: hunter2 Bearer xyz", "hunter2", "")
	f.Add(`{"api_key":"k\"x","secret":12}`, "k\\\"x", "secret")
	f.Add(`body: "{\"token\":\"abc def\"}"`, "abc def", "abc ")
	f.Add("aaaaaaaa", "aaaa", "aaaaa")
	f.Add("xx[REDACTED]yy", "D]yy", "xx[R")
	f.Add("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz", "Basic")
	f.Add("sent Bearer sk-live-12345 to xoxb-1-2-abcdef", "Bearer sk-live-12345", "token xoxb")
	f.Add("cb?k=a%2Bb%2Fc&x=1", "a+b/c", "")
	f.Add(`{\"k\":\"q\\\"uote\"}`, `q"uote`, "")
	f.Add("dial postgres://u:Pw-1234567@h/x?password=abc&sslmode=x", "Pw-1234567", "password")
	f.Add("key sk-proj-Ab3cD4eF5gH6iJ7kL8mN9oP0 AKIAIOSFODNN7EXAMPLE", "sk-proj-Ab3cD4eF5gH6iJ7kL8mN9oP0", "AKIAIOSFODNN7EXAMPLE")
	f.Add(`args {"password":"hunter22","x":"6875";"}`, "hunter22", "68756e7465723232")
	f.Add("aHVudGVyMjI= eGh1bnRlcjIy %2Fs3cr3t-x", "hunter22", "/s3cr3t-x")
	f.Fuzz(func(t *testing.T, s, secret1, secret2 string) {
		out := RedactString(s, secret1, secret2)
		for _, secret := range []string{secret1, secret2} {
			requireScrubbed(t, out, secret)
		}
	})
}

// requireScrubbed fails when text outside the Redacted markers of out holds
// secret (or, for "Bearer x", x). A secret sharing characters with the
// marker can appear across one, so only the pieces between markers are
// searched.
func requireScrubbed(t *testing.T, out, secret string) {
	t.Helper()
	if scheme, rest, ok := strings.Cut(secret, " "); ok && isAuthScheme(scheme) {
		secret = strings.TrimSpace(rest)
	}
	if !scrubbable(secret) {
		return
	}
	for _, piece := range strings.Split(out, Redacted) {
		require.NotContains(t, piece, secret)
	}
}

// FuzzRedactSecrets plants a secret, in several of the forms it takes in
// transit, inside keys and values of a document (around an arbitrary valid
// document) and checks that Redact leaves it nowhere.
func FuzzRedactSecrets(f *testing.F) {
	f.Add([]byte(`{"a":1}`), "xoxb-planted-secret", "invalid token: ", "!")
	f.Add([]byte(`[]`), "Bearer hunter2!", "Authorization: ", "")
	f.Add([]byte(`"x"`), `q"u\ote<&>`, `{"k":"`, `"}`)
	f.Add([]byte(`null`), "a+b/c d", "?k=", "&x")
	f.Add([]byte(`{}`), "aaaa", "aa", "aa")
	f.Add([]byte(``), "[REDACTED]x", "[REDA", "CTED]")
	f.Add([]byte(`{"password":"x"}`), "Pw-1234567", "postgres://u:", "@h/x")
	f.Add([]byte(`"password=1"`), "s3cr3t-x/y", "password=", "&")
	f.Add([]byte(`[]`), "demo", "this is a ", " of outboxd")
	f.Add([]byte(`{}`), "sk-proj-Ab3cD4eF5gH6iJ7kL8mN9oP0", `{\"api_key\":\"`, `\"}`)
	f.Fuzz(func(t *testing.T, doc []byte, secret, prefix, suffix string) {
		if strings.ContainsAny(secret, "\x00\uFFFD") {
			// Redact stores NUL as U+FFFD; such a secret could only appear
			// after that substitution.
			t.Skip()
		}
		bare := secret
		if scheme, rest, ok := strings.Cut(secret, " "); ok && isAuthScheme(scheme) {
			bare = strings.TrimSpace(rest)
		}
		planted := map[string]any{
			"text":            prefix + bare + suffix,
			"nested":          map[string]any{"list": []any{bare, 1, prefix + bare}},
			bare + suffix:     true,
			"embedded_json":   `{"e":"` + jsonEscape(bare, false) + `"}`,
			"query":           "https://x/?k=" + url.QueryEscape(bare),
			"header":          "Authorization: Bearer " + bare,
			"sensitive_token": bare,
		}
		if json.Valid(doc) {
			planted["doc"] = json.RawMessage(doc)
		}
		in, err := json.Marshal(planted)
		require.NoError(t, err)

		out := Redact(in, secret)
		require.True(t, json.Valid(out), "invalid output %q", out)
		require.Equal(t, string(out), string(Redact(out, secret)), "not idempotent")
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				requireScrubbed(t, v, secret)
			case map[string]any:
				for k, val := range v {
					requireScrubbed(t, k, secret)
					walk(val)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(decodeNumbers(t, out))
	})
}
