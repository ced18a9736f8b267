package policy

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces every sensitive value.
const Redacted = "[REDACTED]"

// unparseable is what Redact returns for input that is not valid JSON: the
// input itself might hold secrets in a form that cannot be found, so it is
// never echoed.
const unparseable = `"[unparseable]"`

// jsonNull is what Redact and Truncate return for empty input.
var jsonNull = json.RawMessage("null")

// sensitiveKeys are the object keys whose values Redact replaces, compared
// case-insensitively against the whole key: the spec's six, plus the OAuth
// names providers put in their answers.
var sensitiveKeys = []string{
	"token", "secret", "password", "authorization", "api_key", "apikey",
	"access_token", "refresh_token", "id_token", "client_secret", "private_key",
}

func isSensitiveKey(key string) bool {
	for _, k := range sensitiveKeys {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// Redact replaces the value of every sensitive key (token, secret, password,
// authorization, api_key, apikey; the whole key, any case) with Redacted, at
// any depth of objects and arrays, whatever the value's type. Member order,
// duplicate keys and number literals are preserved; the output is compact.
// Input that is not valid JSON yields the JSON string "[unparseable]" and
// empty input yields null, so the result is always valid JSON.
//
// Only exact key names match (the list also holds the OAuth names
// access_token, refresh_token, id_token, client_secret and private_key).
func Redact(doc json.RawMessage) json.RawMessage {
	if isBlank(doc) {
		return jsonNull
	}
	v, err := parseJSON(doc)
	if err != nil {
		return json.RawMessage(unparseable)
	}
	redactValue(&v)
	return appendValue(make([]byte, 0, len(doc)), &v)
}

func redactValue(v *value) {
	switch v.kind {
	case kindArray:
		for i := range v.elems {
			redactValue(&v.elems[i])
		}
	case kindObject:
		for i := range v.members {
			m := &v.members[i]
			if isSensitiveKey(m.key) {
				m.val = value{kind: kindString, str: Redacted}
				continue
			}
			redactValue(&m.val)
		}
	}
}

// minSecretLen is the shortest literal secret RedactString replaces; shorter
// ones would shred ordinary words in the message while protecting nothing.
const minSecretLen = 4

// sensitiveWord matches the sensitive key names in free text. It also
// matches them as the end of a longer name (access_token, client_secret,
// x-api-key) because over-redacting an error message costs little.
const sensitiveWord = `(?:token|secret|password|authorization|api[_-]?key)`

// Free-text patterns. The capture group is the value that is replaced.
var (
	// keyValuePattern matches key=value and key: value, optionally with the
	// key quoted (JSON fragments, also with escaped quotes as in JSON
	// embedded in a JSON string) and optionally with an auth scheme before
	// the value. The value may be a double-quoted string (closed or cut
	// off), an escaped-quoted string, a single-quoted string, or a bare run
	// of characters up to a delimiter. A value that is already Redacted is
	// matched first so that redaction is idempotent.
	keyValuePattern = regexp.MustCompile(`(?i)` + sensitiveWord + `(?:\\?["'])?\s*[:=]\s*` +
		`(?:(?:bearer|basic)\s+)?` +
		`(?:` +
		`(\[REDACTED\])` +
		`|\\"((?s:.*?))(?:\\"|$)` +
		`|"((?:[^"\\]|\\.)*)"?` +
		`|'([^']*)'?` +
		`|([^\s"'\\,;&<>(){}\[\]]+)` +
		`)`)

	// authSchemePattern matches credentials after an HTTP auth scheme.
	authSchemePattern = regexp.MustCompile(`(?i)\b(?:bearer|basic)\s+([^\s"'\\,;<>(){}\[\]]+)`)
)

// RedactString scrubs free text such as an error message before it is
// stored or logged. It replaces every occurrence of each literal secret at
// least four bytes long, and the values in key=value, key: value and
// "key":"value" fragments whose key ends in a sensitive name, and the
// credentials after "Bearer" or "Basic" (all case-insensitive). Matches are
// found on the original text and overlapping matches merge into one
// Redacted, so text outside a marker never contains a listed secret.
func RedactString(s string, secrets ...string) string {
	var spans []span
	for _, secret := range secrets {
		if len(secret) < minSecretLen {
			continue
		}
		for from := 0; ; {
			i := strings.Index(s[from:], secret)
			if i < 0 {
				break
			}
			start := from + i
			spans = append(spans, span{start, start + len(secret)})
			from = start + 1
		}
	}
	spans = appendGroupSpans(spans, s, keyValuePattern)
	spans = appendGroupSpans(spans, s, authSchemePattern)
	if len(spans) == 0 {
		return s
	}

	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var b strings.Builder
	b.Grow(len(s))
	last := 0 // end of the text already written or covered
	for i := 0; i < len(spans); {
		start, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start <= end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(s[last:start])
		b.WriteString(Redacted)
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

type span struct{ start, end int }

// appendGroupSpans appends the span of the participating capture group of
// every match of re, skipping empty values and values that are already
// Redacted.
func appendGroupSpans(spans []span, s string, re *regexp.Regexp) []span {
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		for g := 2; g+1 < len(m); g += 2 {
			start, end := m[g], m[g+1]
			if start < 0 || start == end || s[start:end] == Redacted {
				continue
			}
			spans = append(spans, span{start, end})
		}
	}
	return spans
}
