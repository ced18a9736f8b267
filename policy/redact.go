package policy

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
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
//     secrets that could be credentials (see scrubbable and secretForms for
//     the forms looked for), every well-known token format (Slack xox?-
//     tokens, GitHub ghp_/gho_/ghu_/ghs_/ghr_/github_pat_ tokens, OpenAI and
//     Anthropic sk- keys, AWS AKIA/ASIA key ids, JWTs, PEM private key
//     blocks, and the credentials after "Bearer" or "Basic" when they look
//     like credentials), the password of a URL, and the value of every
//     key=value or "key": value fragment whose key names a secret by the
//     same rule, keeping the text around them.
//
// Member order, duplicate keys and number literals are preserved (but for a
// number jsonb cannot hold, kept as a string of its text, and a NUL in a
// string, which becomes U+FFFD: the output is always storable); the output
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
	"token", "secret", "secrets", "password", "passwords", "passwd", "passphrase", "authorization", "bearer",
	"cookie", "cookies", "credential", "credentials", "connectionstring", "connstring", "connstr",
	"apikey", "apikeys", "privatekey", "secretkey", "accesskey", "authkey", "clientkey", "signingkey", "encryptionkey", "masterkey",
}

// sensitiveWords are sensitive only as the whole last word: they are too
// short or too common to match as a suffix (bypass, oauth, wpwd).
var sensitiveWords = []string{"pwd", "pass", "auth", "jwt", "session", "dsn", "otp"}

// isSensitiveKey reports whether the values under key are redacted. A key
// names a secret when
//
//   - its letters, lower-cased and with everything else dropped (case,
//     "-", "_", ".", digits), end in token, secret(s), password(s), passwd,
//     passphrase, authorization, bearer, cookie(s), credential(s),
//     connectionstring, connstring, connstr, or key(s) after api, or key
//     after private, secret, access, auth, client, signing, encryption or
//     master: token, auth_token, accessToken, GITHUB_TOKEN, oauth2_token,
//     clientSecret, webhook_secret, my_password, PassWord, set-cookie,
//     credentials, connection_string, api-key, x-api-key, APIKey, api_keys,
//     privateKey, secret_key, signing_key;
//   - or its last word — split at non-letters and camelCase boundaries
//     (sessionId → session, id; APIKey → api, key) — is pwd, pass, auth,
//     jwt, session, dsn or otp: pwd, pass, user_pass, auth, basicAuth,
//     sentry_dsn.
//
// The spec's six (token, secret, password, authorization, api_key, apikey)
// are all covered. Keys that describe a secret rather than hold one do not
// match, because they end in something else: token_type, token_id,
// token_count, session_id, sessionId, secret_name, password_hint,
// api_key_id, auth_url, key, and the plural "tokens" of language-model usage
// counters (tokens, max_tokens, tokens_used, input_tokens) — which also
// means access_tokens (a list) is not redacted by name. Words that merely
// contain a secret word are not secret names either: author, passenger,
// bypass, keyboard.
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

// minScanLen is the shortest text worth scanning: nothing shorter holds
// a secret any rule finds.
const minScanLen = 4

// sensitiveWord matches sensitive key names in free text. It also matches
// them as the end of a longer name (access_token, client_secret, x-api-key,
// privateKey) because over-redacting an error message costs little.
const sensitiveWord = `(?:token|secret|passw(?:or)?d|pwd|passphrase|authorization|credentials?|cookie|jwt|dsn|` +
	`connection[_-]?string|(?:api|private|secret|access|signing|client|auth)[_-]?key)`

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

// Keyed fragments of every string Redact and RedactString see: a key,
// judged by isSensitiveKey (the rule of JSON keys), and its value, replaced
// when the key names a secret. The value patterns are anchored after the =
// or : and match a value already Redacted first, so that redaction is
// idempotent.
var (
	// key=value: query strings, form bodies, DSNs (host=x password=y),
	// environment and INI lines. The value may be quoted.
	bareValue = regexp.MustCompile(`^[ \t]*(?:` +
		`(\[REDACTED\])` +
		`|"((?:[^"\\]|\\.)*)"?` +
		`|'([^']*)'?` +
		`|([^\s"'\\,;&<>(){}\[\]=][^\s"'\\,;&<>(){}\[\]]*)` +
		`)`)
	// "key": value and \"key\": value — JSON written into text, such as a
	// tool that answers with its arguments as text.
	quotedValue = regexp.MustCompile(`^[ \t]*(?:` +
		`(\[REDACTED\])` +
		`|\\"((?s:.*?))(?:\\"|$)` +
		`|"((?:[^"\\]|\\.)*)"?` +
		`|(-?[0-9][0-9A-Za-z.+-]*)` +
		`)`)
)

// maxKeyLen bounds the key looked at before an = or a :.
const maxKeyLen = 64

// appendKeyedSpans appends the spans of the values of the key=value and
// "key": value fragments of s whose key names a secret, skipping values
// that are already Redacted.
func appendKeyedSpans(spans []span, s string) []span {
	for i := 0; ; i++ {
		n := strings.IndexAny(s[i:], "=:")
		if n < 0 {
			return spans
		}
		i += n
		key, value := bareKeyBefore(s, i), bareValue
		if s[i] == ':' {
			key, value = quotedKeyBefore(s, i), quotedValue
		}
		if key == "" || !isSensitiveKey(key) {
			continue
		}
		m := value.FindStringSubmatchIndex(s[i+1:])
		for g := 2; m != nil && g+1 < len(m); g += 2 {
			start, end := i+1+m[g], i+1+m[g+1]
			if m[g] < 0 || start == end || s[start:end] == Redacted {
				continue
			}
			spans = append(spans, span{start, end})
		}
	}
}

// bareKeyBefore returns the run of letters, digits, _, . and - that ends,
// but for blanks, at s[i] (an =).
func bareKeyBefore(s string, i int) string {
	end := i
	for end > 0 && (s[end-1] == ' ' || s[end-1] == '\t') {
		end--
	}
	start := end
	for start > 0 && end-start < maxKeyLen && isKeyByte(s[start-1]) {
		start--
	}
	return s[start:end]
}

func isKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// quotedKeyBefore returns the key of "key" or \"key\" ending, but for
// blanks, at s[i] (a :).
func quotedKeyBefore(s string, i int) string {
	end := i
	for end > 0 && (s[end-1] == ' ' || s[end-1] == '\t') {
		end--
	}
	if end == 0 || s[end-1] != '"' {
		return ""
	}
	end--
	if end > 0 && s[end-1] == '\\' {
		end--
	}
	start := end
	for start > 0 && end-start < maxKeyLen && !strings.ContainsRune("\"\\\n", rune(s[start-1])) {
		start--
	}
	if start == 0 || s[start-1] != '"' {
		return ""
	}
	return s[start:end]
}

// tokenFormat is a well-known credential format. The secret is the first
// capture group, or the whole match when there is none; valid, when set,
// must accept it. A string without hint (case-insensitively with fold)
// cannot match: the regular expression is not run on it.
type tokenFormat struct {
	hint  string
	fold  bool
	re    *regexp.Regexp
	valid func(string) bool
}

// mayMatch reports whether s holds the format's hint.
func (f *tokenFormat) mayMatch(s string) bool {
	if f.fold {
		return containsFold(s, f.hint)
	}
	return strings.Contains(s, f.hint)
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// ignoring ASCII case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && s[i+j]|0x20 == sub[j] {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// tokenFormats are searched for in every string Redact and RedactString
// see, whatever key it sits under. They are anchored on prefixes distinctive
// enough that matching inside a longer word does little harm, which keeps
// redaction idempotent when a replaced secret ran into one.
var tokenFormats = []tokenFormat{
	// Slack: xoxb- (bot), xoxp- (user), xoxa-, xoxo-, xoxs-, xoxr-.
	{hint: "xox", re: regexp.MustCompile(`xox[abposr]-[0-9A-Za-z-]{5,}`)},
	// GitHub: personal, OAuth, user-to-server, server-to-server and refresh
	// tokens, and fine-grained personal access tokens.
	{hint: "gh", re: regexp.MustCompile(`gh[pousr]_[0-9A-Za-z]{20,}`)},
	{hint: "github_pat_", re: regexp.MustCompile(`github_pat_[0-9A-Za-z_]{20,}`)},
	// OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-) keys: sk-
	// at the start of a word and 20 or more key characters with a digit or
	// both cases, so that a slug such as sk-folding-cube-animation is kept.
	{hint: "sk-", re: regexp.MustCompile(`\bsk-[0-9A-Za-z_-]{20,}`), valid: looksRandom},
	// AWS access key ids: AKIA (long-term) and ASIA (temporary), 20
	// characters. The secret access key has no format of its own; it is
	// found by its name (aws_secret_access_key, SecretAccessKey).
	{hint: "IA", re: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	// The password in a URL's user information, scheme://user:password@host
	// (the user is kept); up to the last @ before the path.
	{hint: "://", re: regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:"'<>]*:([^\s/?#"'<>]+)@`)},
	// JWT: three base64url segments, the header a JSON object ("eyJ" is
	// base64 for `{"`); the signature is empty for alg "none".
	{hint: "eyJ", re: regexp.MustCompile(`eyJ[0-9A-Za-z_-]{4,}\.[0-9A-Za-z_-]{2,}\.[0-9A-Za-z_-]*`)},
	// PEM private keys, the whole block; a block cut off before its END
	// line is redacted to the end of the text.
	{hint: "-----BEGIN", re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY-----|(?s:.*))`)},
	// Bearer credentials (RFC 6750 token68) that look like one: at least 8
	// characters with a digit, or at least 20, so that "bearer of bad news"
	// and "Bearer tokens expire" are left alone.
	{hint: "bearer", fold: true, re: regexp.MustCompile(`(?i)bearer\s+([0-9A-Za-z._~+/-]+=*)`), valid: looksLikeToken},
	// Basic credentials: base64 of user:password.
	{hint: "basic", fold: true, re: regexp.MustCompile(`(?i)basic\s+([0-9A-Za-z+/]{4,}={0,2})`), valid: isBasicCredentials},
}

func looksLikeToken(s string) bool {
	return len(s) >= 20 || (len(s) >= 8 && strings.ContainsAny(s, "0123456789"))
}

// looksRandom reports whether s has a digit or both upper- and lower-case
// letters, as generated keys do and words and slugs do not.
func looksRandom(s string) bool {
	return strings.ContainsAny(s, "0123456789") ||
		(strings.ContainsFunc(s, unicode.IsUpper) && strings.ContainsFunc(s, unicode.IsLower))
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
//   - every occurrence of each secret that could be a credential (see
//     scrubbable), in the forms secretForms lists; a secret given with an auth
//     scheme ("Bearer x", "Basic x", "token x") is looked for without it;
//   - what Redact finds in strings: the well-known token formats, URL
//     passwords, and the values in key=value and "key": value fragments
//     whose key names a secret;
//   - the values in key=value, key: value and "key":"value" fragments whose
//     key ends in a sensitive name (token, secret, password, passwd, pwd,
//     passphrase, authorization, credential(s), cookie, jwt, dsn,
//     connection string, api/private/secret/access/signing/client/auth
//     key), and anything after "Bearer" or "Basic" (all case-insensitive) —
//     free text is scrubbed more eagerly than JSON values because
//     over-redacting an error message costs little.
//
// Matches are found on the original text and overlapping matches merge into
// one Redacted, so text outside a marker never contains a listed secret.
// NUL and bytes that are not UTF-8, which Postgres refuses in text, become
// U+FFFD.
func RedactString(s string, secrets ...string) string {
	sc := newScrubber(secrets)
	return storableText(sc.scrub(s, func(spans []span) []span {
		spans = appendGroupSpans(spans, s, keyValuePattern, nil)
		return appendGroupSpans(spans, s, authSchemePattern, nil)
	}))
}

// MaxErrorBytes bounds the text of a stored error, whatever its source: an
// error can quote a whole document (each source also keeps its own shorter
// bound), and it is stored, logged and sent with every event, webhook and
// answer about its invocation.
const MaxErrorBytes = 4096

// ErrorText is RedactString of an error's text, cut to MaxErrorBytes on a
// character boundary, saying how much was cut. The secrets are scrubbed
// before the cut, so none is left half in it.
func ErrorText(s string, secrets ...string) string {
	s = RedactString(s, secrets...)
	if len(s) <= MaxErrorBytes {
		return s
	}
	cut := MaxErrorBytes - 48 // room for the note
	for !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " … (" + strconv.Itoa(len(s)-cut) + " more bytes cut)"
}

// storableText returns s with what Postgres refuses in text replaced by
// U+FFFD: NUL, and bytes that are not UTF-8. A provider's error can hold
// either, and an outcome Postgres refuses to store would have its job
// make the call again.
func storableText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// scrubber replaces secrets and token formats in strings.
type scrubber struct {
	// literals are every form of every secret, longest first.
	literals []string
}

func newScrubber(secrets []string) *scrubber {
	sc := &scrubber{}
	for _, secret := range secrets {
		if secret = withoutScheme(secret); scrubbable(secret) {
			sc.literals = append(sc.literals, cachedForms(secret)...)
		}
	}
	// Longest first; equal ones next to each other, to drop the repeats.
	slices.SortFunc(sc.literals, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	sc.literals = slices.Compact(sc.literals)
	return sc
}

// withoutScheme is secret without an auth scheme before it: "Bearer x" is
// looked for as x, which also covers the header form and keeps the scheme
// readable.
func withoutScheme(secret string) string {
	if scheme, rest, ok := strings.Cut(secret, " "); ok && isAuthScheme(scheme) {
		return strings.TrimSpace(rest)
	}
	return secret
}

func isAuthScheme(s string) bool {
	return strings.EqualFold(s, "Bearer") || strings.EqualFold(s, "Basic") || strings.EqualFold(s, "token")
}

// scrub replaces the literals and token formats in s, plus whatever more
// adds, with Redacted.
func (sc *scrubber) scrub(s string, more func([]span) []span) string {
	if len(s) < minScanLen {
		return s
	}
	spans := sc.spans(s)
	if more != nil {
		spans = more(spans)
	}
	return replaceSpans(s, spans)
}

// spans returns the spans of s that scrub replaces: the literals, the
// token formats and the values of keyed fragments.
func (sc *scrubber) spans(s string) []span {
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
	for i := range tokenFormats {
		if f := &tokenFormats[i]; f.mayMatch(s) {
			spans = appendGroupSpans(spans, s, f.re, f.valid)
		}
	}
	return appendKeyedSpans(spans, s)
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
