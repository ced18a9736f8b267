// Package policy holds the pure decision and data-hygiene rules that every
// invocation passes through before anything is stored or executed.
//
// # Modes
//
// Resolve runs the mode cascade: an automation override wins over an
// organization default, which wins over the default the action's risk tier
// infers (R0/R1 allow; R2, R3, R4 and a missing or unknown tier require
// approval). A stored mode that is not one of the three valid modes denies,
// so a corrupt or future value can never widen access. An R3 or R4 action
// (and one without a tier) never auto-executes: an allow from any level
// becomes require_approval (mode source risk_tier), while a deny still
// denies. A request may then only tighten the result (a risk hint or
// approval=required on the envelope), and ApplyDriftGuard downgrades allow
// to require_approval for connector tools whose definition changed since an
// admin last reviewed it; deny is never relaxed. Tier documents the tiers
// and their one mapping onto the risk words read, write and danger.
//
// # Redaction and truncation
//
// Redact replaces, at any depth of a JSON document, the value of every key
// that names a secret, and inside every string: the well-known credential
// formats (Slack xox?- tokens, GitHub ghp_/gho_/ghu_/ghs_/ghr_/github_pat_
// tokens, OpenAI and Anthropic sk- keys, AWS AKIA/ASIA access key ids,
// JWTs, PEM private keys, Bearer and Basic credentials), the password of a
// URL (scheme://user:password@host), the values of key=value and
// "key": value fragments whose key names a secret (query strings, DSNs, JSON
// written as text), and every occurrence of the exact secrets it is given.
// RedactString does the same for free text such as error messages, where
// it also scrubs key: value fragments more eagerly.
//
// A key names a secret when its letters, lower-cased with separators,
// digits and camelCase dropped, end in token, secret(s), password(s),
// passwd, passphrase, authorization, bearer, cookie(s), credential(s),
// connectionstring/connstring/connstr, api key(s), or key after private,
// secret, access, auth, client, signing, encryption or master (so api-key,
// x-api-key, accessToken, auth_token, clientSecret, webhook_secret,
// privateKey, connection_string, set-cookie), or when its last word is pwd,
// pass, auth, jwt, session, dsn or otp (user_pass, basicAuth, sentry_dsn).
// Keys that describe a secret without holding one end in something else and
// are kept: token_type, token_count, session_id, secret_name, auth_url, and
// the plural tokens of usage counters such as max_tokens; so are words that
// merely contain a secret word (author, passenger, bypass, keyboard). The
// spec's six (token, secret, password, authorization, api_key, apikey) are
// the minimum.
//
// The exact secrets are those a worker knows: the credentials it used, the
// exact values of an invocation's secret-named params (SecretValues of the
// sealed params) and outboxd's own secrets. Each is looked for raw,
// JSON-escaped (with and without HTML escapes), URL-escaped (query and
// path), in hex, and in base64 (both alphabets, at any alignment), but only
// when it could be a credential: at least 8 bytes long and, below 16 bytes,
// mixing letters, digits and other characters. Shorter values and short
// plain words or numbers (demo, password, changeme, 12345678) are ordinary
// text that scrubbing would shred while protecting nothing; a real
// credential is long and random, and a short secret under a secret-named key
// or in a known format is still redacted by the rules above.
//
// Truncate prunes a document
// structurally (trailing array elements, the largest object members, the tail
// of long strings) so that what is stored is always valid JSON of bounded
// size, marked with "_truncated": true. Results are redacted first and
// truncated second.
//
// # Hashing
//
// DefinitionHash fingerprints an MCP tool's input schema for drift detection.
// It ignores "description", "default" and "enum", which commonly carry
// dynamic data and would otherwise report drift that changes nothing about
// what the tool does.
package policy
