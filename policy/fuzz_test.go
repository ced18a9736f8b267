package policy

import (
	"bytes"
	"encoding/json"
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
}

// redactReference is an independent redaction over encoding/json's generic
// decoding, used to check Redact's output.
func redactReference(v any) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "\x00", "\uFFFD")
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, val := range v {
			k2 := strings.ReplaceAll(k, "\x00", "\uFFFD")
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
		var decoded map[string]any
		require.NoError(t, json.Unmarshal(out, &decoded))
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
	f.Fuzz(func(t *testing.T, s, secret1, secret2 string) {
		out := RedactString(s, secret1, secret2)
		for _, secret := range []string{secret1, secret2} {
			if len(secret) < minSecretLen {
				continue
			}
			// Text outside the markers must not hold the secret; a secret
			// sharing characters with the marker can appear across one.
			for _, piece := range strings.Split(out, Redacted) {
				require.NotContains(t, piece, secret)
			}
		}
	})
}
