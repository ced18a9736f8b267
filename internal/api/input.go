package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/errs"
)

// maxIdentifierBytes bounds path parameters, query parameters and the
// Idempotency-Key header. Identifiers end up in btree indexes, which refuse
// entries of a few kilobytes.
const maxIdentifierBytes = 255

// maxJSONDepth is how deep checkBodyText follows a body; encoding/json
// refuses deeper documents anyway.
const maxJSONDepth = 10000

// checkRequestText refuses a request whose path parameters, query
// parameters or Idempotency-Key header would not survive the trip to
// Postgres: invalid UTF-8, NUL and other control characters, or more than
// maxIdentifierBytes. It runs for every authenticated route before its
// handler, so no handler needs to think about it. The error names the
// parameter.
func checkRequestText(r *http.Request) error {
	for _, name := range patternWildcards(r.Pattern) {
		if err := checkIdentifier(name, "path parameter "+name, r.PathValue(name)); err != nil {
			return err
		}
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return invalidField("query", "the query string is malformed: %v", err)
	}
	for name, values := range query {
		if err := checkIdentifier("query", "query parameter name "+strconv.QuoteToASCII(name), name); err != nil {
			return err
		}
		for _, v := range values {
			if err := checkIdentifier(name, "query parameter "+name, v); err != nil {
				return err
			}
		}
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if err := checkIdentifier("Idempotency-Key", "the Idempotency-Key header", key); err != nil {
			return err
		}
	}
	return nil
}

// patternWildcards returns the names of the wildcards of a ServeMux
// pattern such as "GET /v1/connectors/{id}/tools".
func patternWildcards(pattern string) []string {
	var names []string
	for {
		i := strings.IndexByte(pattern, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(pattern[i:], '}')
		if j < 0 {
			return names
		}
		name := strings.TrimSuffix(pattern[i+1:i+j], "...")
		if name != "$" {
			names = append(names, name)
		}
		pattern = pattern[i+j+1:]
	}
}

// checkIdentifier refuses a value that is not valid UTF-8, holds a control
// character or is longer than maxIdentifierBytes; what describes the value
// in the message.
func checkIdentifier(field, what, s string) error {
	if problem := textProblem(s); problem != "" {
		return invalidField(field, "%s %s", what, problem)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return invalidField(field, "%s contains a control character", what)
		}
	}
	if len(s) > maxIdentifierBytes {
		return invalidField(field, "%s is longer than %d bytes", what, maxIdentifierBytes)
	}
	return nil
}

// textProblem says why Postgres would refuse s as text, or "".
func textProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	}
	return ""
}

func invalidField(field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &errs.ValidationError{Message: msg, Fields: []executors.FieldError{{Field: field, Message: msg}}}
}

// checkBodyText refuses a JSON body with a string, key or value, at any
// depth (params and args included), that is not valid UTF-8, contains a
// NUL character (raw or as \u0000) or half of a UTF-16 surrogate pair
// (\ud800 without its other half): Postgres stores no NUL in text or
// jsonb, and replacing what cannot be stored, as encoding/json does with
// U+FFFD, would execute something other than what was asked. The error
// names the field by its path (params.text, patterns[2]). A body that is
// not JSON passes, for the decoder to report.
func checkBodyText(body []byte) error {
	if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u0000`)) && loneSurrogate(body) == "" {
		return nil
	}
	type frame struct {
		object  bool
		wantKey bool
		key     string
		index   int
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(fieldName(f.key))
			} else {
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return cmp.Or(b.String(), "body")
	}
	// valueDone moves the innermost container past the value just read.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := &stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or not JSON: decode reports it
		}
		raw := body[start:dec.InputOffset()]
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				if len(stack) >= maxJSONDepth {
					return nil
				}
				stack = append(stack, frame{object: tok == '{', wantKey: tok == '{'})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			problem := rawStringProblem(raw, tok)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = tok, false
				if problem != "" {
					return invalidField(path(), "the key %s %s", path(), problem)
				}
				continue
			}
			if problem != "" {
				return invalidField(path(), "%s %s", path(), problem)
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// rawStringProblem checks a string token both as written (the bytes
// between the tokens around it, which the decoder would have repaired) and
// as decoded.
func rawStringProblem(raw []byte, decoded string) string {
	if !utf8.Valid(raw) {
		return "is not valid UTF-8"
	}
	if esc := loneSurrogate(raw); esc != "" {
		return "contains " + esc + ", half of a UTF-16 surrogate pair without its other half"
	}
	return textProblem(decoded)
}

// loneSurrogate returns the first \u escape in JSON text that is a UTF-16
// surrogate without its other half, or "". Backslashes occur only inside
// strings, so the text may be one string token or a whole document.
func loneSurrogate(text []byte) string {
	for i := 0; i < len(text); i++ {
		if text[i] != '\\' {
			continue
		}
		r := escapedRune(text[i:])
		if r < 0 {
			i++ // past the escaped character
			continue
		}
		esc := string(text[i : i+6])
		i += 5 // at the escape's last digit
		switch {
		case !utf16.IsSurrogate(r):
		case r >= 0xdc00: // a low half with no high half before it
			return esc
		default:
			if low := escapedRune(text[i+1:]); low < 0xdc00 || low > 0xdfff {
				return esc
			}
			i += 6
		}
	}
	return ""
}

// escapedRune is the code unit of a \uXXXX escape at the start of b, or -1.
func escapedRune(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	n, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}

// fieldName is a key as it appears in a field path: as it is when it is
// printable, quoted otherwise.
func fieldName(key string) string {
	for _, r := range key {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError || r == '.' || r == '[' {
			return strconv.QuoteToASCII(key)
		}
	}
	return key
}

// readBody reads the whole (already bounded) request body, answering 413
// when it is over the limit.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, code: "body_too_large", message: fmt.Sprintf("request body exceeds %d bytes", maxErr.Limit)}
	case err != nil:
		return nil, badRequest("invalid_json", "reading the request body: "+err.Error())
	}
	return body, nil
}

// isUnstorableValue reports whether Postgres refused a value as text or as
// an index entry (too long, invalid encoding, a NUL). It is the safety net
// behind the edge checks, which name the field; it cannot.
func isUnstorableValue(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "54000", "22001", "22021", "22P05":
		return true
	}
	return false
}
