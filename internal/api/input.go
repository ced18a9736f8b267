package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/jsontext"
)

// maxIdentifierBytes bounds path parameters, query parameters and the
// Idempotency-Key header. Identifiers end up in btree indexes, which refuse
// entries of a few kilobytes.
const maxIdentifierBytes = 255

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
	if problem := jsontext.IdentifierProblem(s); problem != "" {
		return invalidField(field, "%s %s", what, problem)
	}
	if len(s) > maxIdentifierBytes {
		return invalidField(field, "%s is longer than %d bytes", what, maxIdentifierBytes)
	}
	return nil
}

func invalidField(field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &errs.ValidationError{Message: msg, Fields: []executors.FieldError{{Field: field, Message: msg}}}
}

// checkBodyText refuses a JSON body with text Postgres cannot store, at
// any depth, naming the field (jsontext.Problem).
func checkBodyText(body []byte) error {
	if field, problem := jsontext.Problem(body); problem != "" {
		return invalidField(field, "%s", problem)
	}
	return nil
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
