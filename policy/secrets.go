package policy

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
)

// Exact secrets shorter than minSecretLen bytes, and plain words and
// numbers shorter than plainSecretLen, are not looked for: see scrubbable.
const (
	minSecretLen   = 8
	plainSecretLen = 16
)

// scrubbable reports whether the exact value secret is looked for when it is
// given to Redact or RedactString (a credential a worker used, a value
// sealed under a secret-named param, one of outboxd's own secrets). A value
// is looked for when it could be a credential:
//
//   - it is at least minSecretLen (8) bytes long, and
//   - below 16 bytes, it mixes kinds of characters (letters, digits,
//     anything else): hunter22, s3cr3t-x, demo-key.
//
// Shorter values and short plain words or numbers (demo, test, password,
// changeme, 12345678) are ordinary text: looking for them would turn every
// "demo" in an answer into Redacted while protecting nothing, since a real
// credential is long and random. Such a value is still redacted wherever a
// rule finds it by its key or format (a "password" key, password=..., a
// URL's password).
func scrubbable(secret string) bool {
	if len(secret) < minSecretLen {
		return false
	}
	if len(secret) >= plainSecretLen {
		return true
	}
	var letters, digits, others bool
	for _, r := range secret {
		switch {
		case unicode.IsLetter(r):
			letters = true
		case unicode.IsDigit(r):
			digits = true
		default:
			others = true
		}
	}
	kinds := 0
	for _, k := range []bool{letters, digits, others} {
		if k {
			kinds++
		}
	}
	return kinds > 1
}

// formsCache keeps the forms of recently given secrets: a worker gives
// the same ones (outboxd's own, a source's credential) to every call, and
// computing them costs more than looking for them. It holds at most
// maxCachedForms secrets and starts over when full.
var (
	formsCache  sync.Map // secret → []string
	formsCached atomic.Int64
)

const maxCachedForms = 1024

func cachedForms(secret string) []string {
	if forms, ok := formsCache.Load(secret); ok {
		return forms.([]string)
	}
	forms := secretForms(secret)
	if formsCached.Add(1) > maxCachedForms {
		formsCache.Clear()
		formsCached.Store(1)
	}
	formsCache.Store(secret, forms)
	return forms
}

// secretForms are the forms in which secret is looked for: as it is,
// JSON-escaped (with and without HTML escaping, as Go's encoders write it),
// URL-escaped (query and path), in hexadecimal and in base64 (standard and
// URL alphabets; see base64Cores).
func secretForms(secret string) []string {
	forms := []string{
		secret,
		jsonEscape(secret, false), jsonEscape(secret, true),
		url.QueryEscape(secret), url.PathEscape(secret),
		hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret))),
	}
	forms = append(forms, base64Cores(secret, base64.RawStdEncoding)...)
	return append(forms, base64Cores(secret, base64.RawURLEncoding)...)
}

// base64Cores returns, for each of the three byte offsets at which secret
// can start inside base64-encoded data, the characters of the encoding that
// depend on secret's bytes alone. Whatever comes before and after secret
// (Basic credentials' user:, a JSON document), one of them appears in the
// encoding, so an encoded secret is found wherever it sits; at most a
// character on either side, less than a byte of it each, stays readable.
func base64Cores(secret string, enc *base64.Encoding) []string {
	var cores []string
	for offset := range 3 {
		buf := make([]byte, offset+len(secret))
		copy(buf[offset:], secret)
		encoded := enc.EncodeToString(buf)
		// Character i covers bits [6i, 6i+6); the secret's are [8*offset,
		// 8*len(buf)).
		first, end := (8*offset+5)/6, 8*len(buf)/6
		if end > first {
			cores = append(cores, encoded[first:end])
		}
	}
	return cores
}

// jsonEscape is s as it appears between the quotes of a JSON string;
// html escapes <, > and & as encoding/json does by default.
func jsonEscape(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		return s
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// SecretValues returns the values Redact replaces in doc: every string, and
// the text of every number, under a key that names a secret, and every
// credential Redact finds inside other strings (token formats, URL
// passwords, the values of key=value fragments). A worker that opens the
// exact params an invocation was sealed with gives them to Redact and
// RedactString as secrets, so that a provider echoing one back, in any
// form, stores nothing. Values that are not scrubbable are left out. Input
// that is not valid JSON yields nil.
func SecretValues(doc json.RawMessage) []string {
	v, err := parseJSON(doc)
	if err != nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if scrubbable(s) {
			out = append(out, s)
		}
	}
	sc := &scrubber{}
	var walk func(v *value, secret bool)
	walk = func(v *value, secret bool) {
		switch v.kind {
		case kindString:
			if secret {
				add(v.str)
				return
			}
			for _, sp := range sc.spans(v.str) {
				add(v.str[sp.start:sp.end])
			}
		case kindNumber:
			if secret {
				add(v.str)
			}
		case kindArray:
			for i := range v.elems {
				walk(&v.elems[i], secret)
			}
		case kindObject:
			for i := range v.members {
				m := &v.members[i]
				for _, sp := range sc.spans(m.key) {
					add(m.key[sp.start:sp.end])
				}
				walk(&m.val, secret || isSensitiveKey(m.key))
			}
		}
	}
	walk(&v, false)
	return out
}
