package policy

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Redacted replaces every sensitive value.
const Redacted = "[REDACTED]"

// unparseable is what Redact returns for input that is not valid JSON: the
// input itself might hold secrets in a form that cannot be found, so it is
// never echoed.
const unparseable = `"[unparseable]"`

// jsonNull is what Redact and Truncate return for empty input.
var jsonNull = json.RawMessage("null")

// Redact makes a JSON document safe to store and show. At any depth of
// objects and arrays it replaces with Redacted:
//
//   - the whole value, whatever its type, of every key that names a
//     secret (token, api-key, accessToken, set-cookie...; the rule is in
//     the package documentation);
//   - inside every string (keys and values): each occurrence of the given
//     secrets (see RedactString for the forms looked for) and every
//     well-known token format (Slack xox?- tokens, GitHub ghp_/gho_/ghu_/
//     ghs_/ghr_/github_pat_ tokens, JWTs, PEM private key blocks, and the
//     credentials after "Bearer" or "Basic" when they look like credentials),
//     keeping the text around them.
//
// Member order, duplicate keys and number literals are preserved; the output
// is compact. Input that is not valid JSON yields the JSON string
// "[unparseable]" and empty input yields null, so the result is always valid
// JSON. Redact runs before Truncate so that no secret is cut in half and
// left partly readable.
func Redact(doc json.RawMessage, secrets ...string) json.RawMessage {
	if isBlank(doc) {
		return jsonNull
	}
	v, err := parseJSON(doc)
	if err != nil {
		return json.RawMessage(unparseable)
	}
	sc := newScrubber(secrets)
	sc.value(&v)
	return appendValue(make([]byte, 0, len(doc)), &v)
}

func (sc *scrubber) value(v *value) {
	switch v.kind {
	case kindString:
		v.str = sc.scrub(v.str, nil)
	case kindArray:
		for i := range v.elems {
			sc.value(&v.elems[i])
		}
	case kindObject:
		for i := range v.members {
			m := &v.members[i]
			sensitive := isSensitiveKey(m.key)
			m.key = sc.scrub(m.key, nil)
			if sensitive {
				m.val = value{kind: kindString, str: Redacted}
				continue
			}
			sc.value(&m.val)
		}
	}
}

// sensitiveSuffixes end the letters of a sensitive key name: accessToken,
// github_token, x-api-key and PassWord all end in one.
var sensitiveSuffixes = []string{
	"token", "secret", "password", "passwd", "passphrase", "authorization", "bearer",
	"cookie", "cookies", "credential", "credentials",
	"apikey", "privatekey", "secretkey", "accesskey", "authkey", "clientkey", "signingkey", "encryptionkey", "masterkey",
}

// sensitiveWords are sensitive only as the whole last word: "pwd", "jwt" and
// "session" are too short or too common to match as a suffix.
var sensitiveWords = []string{"pwd", "jwt", "session"}

// isSensitiveKey reports whether the values under key are redacted. A key
// names a secret when
//
//   - its letters, lower-cased and with everything else dropped (case,
//     "-", "_", ".", digits), end in token, secret, password, passwd,
//     passphrase, authorization, bearer, cookie(s), credential(s), or key
//     after api, private, secret, access, auth, client, signing, encryption
//     or master: token, auth_token, accessToken, GITHUB_TOKEN, oauth2_token,
//     clientSecret, my_password, PassWord, set-cookie, credentials, api-key,
//     x-api-key, APIKey, privateKey, secret_key;
//   - or its last word — split at non-letters and camelCase boundaries
//     (sessionId → session, id; APIKey → api, key) — is pwd, jwt or
//     session.
//
// The spec's six (token, secret, password, authorization, api_key, apikey)
// are all covered. Keys that describe a secret rather than hold one do not
// match, because they end in something else: token_type, token_id,
// session_id, sessionId, secret_name, password_hint, api_key_id, key, and
// the plural "tokens" of language-model usage counters (tokens, max_tokens,
// tokens_used, input_tokens) — which also means access_tokens (a list) is
// not redacted by name.
func isSensitiveKey(key string) bool {
	words := keyWords(key)
	if len(words) == 0 {
		return false
	}
	letters := strings.Join(words, "")
	for _, suffix := range sensitiveSuffixes {
		if strings.HasSuffix(letters, suffix) {
			return true
		}
	}
	last := words[len(words)-1]
	for _, w := range sensitiveWords {
		if last == w {
			return true
		}
	}
	return false
}

// keyWords splits key into lower-case words of letters, breaking at every
// other character and before an upper-case letter that follows a lower-case
// one (accessToken) or that starts a word after an acronym (APIKey).
func keyWords(key string) []string {
	var words []string
	runes := []rune(key)
	start := -1
	flush := func(end int) {
		if start >= 0 {
			words = append(words, strings.ToLower(string(runes[start:end])))
			start = -1
		}
	}
	for i, r := range runes {
		if !unicode.IsLetter(r) {
			flush(i)
			continue
		}
		if start >= 0 && unicode.IsUpper(r) {
			prev := runes[i-1]
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(runes))
	return words
}

// minSecretLen is the shortest literal secret that is replaced; shorter ones
// would shred ordinary words while protecting nothing.
const minSecretLen = 4

// sensitiveWord matches sensitive key names in free text. It also matches
// them as the end of a longer name (access_token, client_secret, x-api-key,
// privateKey) because over-redacting an error message costs little.
const sensitiveWord = `(?:token|secret|passw(?:or)?d|pwd|passphrase|authorization|credentials?|cookie|jwt|` +
	`(?:api|private|secret|access)[_-]?key)`

// Free-text patterns of RedactString. The capture group is the value that
// is replaced.
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

	// authSchemePattern matches anything after an HTTP auth scheme.
	authSchemePattern = regexp.MustCompile(`(?i)\b(?:bearer|basic)\s+([^\s"'\\,;<>(){}\[\]]+)`)
)

// tokenFormat is a well-known credential format. The secret is the first
// capture group, or the whole match when there is none; valid, when set,
// must accept it.
type tokenFormat struct {
	re    *regexp.Regexp
	valid func(string) bool
}

// tokenFormats are searched for in every string Redact and RedactString
// see, whatever key it sits under. They are anchored on prefixes distinctive
// enough that matching inside a longer word does little harm, which keeps
// redaction idempotent when a replaced secret ran into one.
var tokenFormats = []tokenFormat{
	// Slack: xoxb- (bot), xoxp- (user), xoxa-, xoxo-, xoxs-, xoxr-.
	{re: regexp.MustCompile(`xox[abposr]-[0-9A-Za-z-]{5,}`)},
	// GitHub: personal, OAuth, user-to-server, server-to-server and refresh
	// tokens, and fine-grained personal access tokens.
	{re: regexp.MustCompile(`gh[pousr]_[0-9A-Za-z]{20,}`)},
	{re: regexp.MustCompile(`github_pat_[0-9A-Za-z_]{20,}`)},
	// JWT: three base64url segments, the header a JSON object ("eyJ" is
	// base64 for `{"`); the signature is empty for alg "none".
	{re: regexp.MustCompile(`eyJ[0-9A-Za-z_-]{4,}\.[0-9A-Za-z_-]{2,}\.[0-9A-Za-z_-]*`)},
	// PEM private keys, the whole block; a block cut off before its END
	// line is redacted to the end of the text.
	{re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY-----|(?s:.*))`)},
	// Bearer credentials (RFC 6750 token68) that look like one: at least 8
	// characters with a digit, or at least 20, so that "bearer of bad news"
	// and "Bearer tokens expire" are left alone.
	{re: regexp.MustCompile(`(?i)bearer\s+([0-9A-Za-z._~+/-]+=*)`), valid: looksLikeToken},
	// Basic credentials: base64 of user:password.
	{re: regexp.MustCompile(`(?i)basic\s+([0-9A-Za-z+/]{4,}={0,2})`), valid: isBasicCredentials},
}

func looksLikeToken(s string) bool {
	return len(s) >= 20 || (len(s) >= 8 && strings.ContainsAny(s, "0123456789"))
}

func isBasicCredentials(s string) bool {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
	}
	return err == nil && utf8.Valid(raw) && strings.Contains(string(raw), ":")
}

// RedactString scrubs free text such as an error message before it is
// stored or logged. It replaces with Redacted:
//
//   - every occurrence of each secret at least four bytes long, as it is,
//     JSON-escaped and URL-query-escaped; a secret given with an auth scheme
//     ("Bearer x", "Basic x", "token x") is looked for without it;
//   - the well-known token formats Redact finds in strings;
//   - the values in key=value, key: value and "key":"value" fragments whose
//     key ends in a sensitive name (token, secret, password, passwd, pwd,
//     passphrase, authorization, credential(s), cookie, jwt, api/private/
//     secret/access key), and anything after "Bearer" or "Basic" (all
//     case-insensitive) — free text is scrubbed more eagerly than JSON
//     values because over-redacting an error message costs little.
//
// Matches are found on the original text and overlapping matches merge into
// one Redacted, so text outside a marker never contains a listed secret.
func RedactString(s string, secrets ...string) string {
	sc := newScrubber(secrets)
	return sc.scrub(s, func(spans []span) []span {
		spans = appendGroupSpans(spans, s, keyValuePattern, nil)
		return appendGroupSpans(spans, s, authSchemePattern, nil)
	})
}

// scrubber replaces secrets and token formats in strings.
type scrubber struct {
	// literals are every form of every secret, longest first.
	literals []string
}

func newScrubber(secrets []string) *scrubber {
	sc := &scrubber{}
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= minSecretLen && !seen[s] {
			seen[s] = true
			sc.literals = append(sc.literals, s)
		}
	}
	for _, secret := range secrets {
		// "Bearer x" is looked for as x, which also covers the header form
		// and keeps the scheme readable.
		if scheme, rest, ok := strings.Cut(secret, " "); ok && isAuthScheme(scheme) {
			secret = strings.TrimSpace(rest)
		}
		if len(secret) < minSecretLen {
			continue
		}
		add(secret)
		add(jsonEscape(secret))
		add(url.QueryEscape(secret))
	}
	sort.Slice(sc.literals, func(i, j int) bool { return len(sc.literals[i]) > len(sc.literals[j]) })
	return sc
}

func isAuthScheme(s string) bool {
	return strings.EqualFold(s, "Bearer") || strings.EqualFold(s, "Basic") || strings.EqualFold(s, "token")
}

// jsonEscape is s as it appears between the quotes of a JSON string.
func jsonEscape(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return s
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// scrub replaces the literals and token formats in s, plus whatever more
// adds, with Redacted.
func (sc *scrubber) scrub(s string, more func([]span) []span) string {
	if len(s) < minSecretLen {
		return s
	}
	// An occurrence of a secret that runs into a marker an earlier
	// redaction left is not redacted again, so redacting is idempotent: the
	// marker is not the secret's text (only a secret made of the marker's
	// own characters can match there).
	markers := literalSpans(nil, s, Redacted)
	inMarker := func(sp span) bool {
		for _, m := range markers {
			if sp.start < m.end && sp.end > m.start {
				return true
			}
		}
		return false
	}
	var spans []span
	for _, lit := range sc.literals {
		for _, sp := range literalSpans(nil, s, lit) {
			if !inMarker(sp) {
				spans = append(spans, sp)
			}
		}
	}
	for _, f := range tokenFormats {
		spans = appendGroupSpans(spans, s, f.re, f.valid)
	}
	if more != nil {
		spans = more(spans)
	}
	return replaceSpans(s, spans)
}

type span struct{ start, end int }

// literalSpans appends the span of every occurrence of lit in s,
// overlapping ones included.
func literalSpans(spans []span, s, lit string) []span {
	for from := 0; ; {
		i := strings.Index(s[from:], lit)
		if i < 0 {
			return spans
		}
		start := from + i
		spans = append(spans, span{start, start + len(lit)})
		from = start + 1
	}
}

// replaceSpans replaces every span of s with Redacted, merging spans that
// overlap or touch.
func replaceSpans(s string, spans []span) string {
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

// appendGroupSpans appends, for every match of re, the span of each
// participating capture group (or of the whole match when re has none),
// skipping empty values, values that are already Redacted and values valid
// refuses.
func appendGroupSpans(spans []span, s string, re *regexp.Regexp, valid func(string) bool) []span {
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		g := 2
		if len(m) == 2 {
			g = 0
		}
		for ; g+1 < len(m); g += 2 {
			start, end := m[g], m[g+1]
			if start < 0 || start == end || s[start:end] == Redacted {
				continue
			}
			if valid != nil && !valid(s[start:end]) {
				continue
			}
			spans = append(spans, span{start, end})
		}
	}
	return spans
}
