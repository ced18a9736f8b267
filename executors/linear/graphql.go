package linear

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

const (
	// maxResponseBytes bounds how much of Linear's answer is read. An
	// issue comes back with its description, which is as long as the
	// params that carried it (up to 4 MiB through the MCP front door), so
	// an answer must have room for it: with less, a create of a long
	// description failed on its own answer, and every retry on the issue
	// it had made.
	maxResponseBytes = 8 << 20

	// defaultRetryAfter is used when Linear rate-limits without a usable
	// Retry-After or reset header.
	defaultRetryAfter = 30 * time.Second

	// maxRetryAfter caps the delay read from a header, so a bogus value
	// cannot park an invocation for days.
	maxRetryAfter = time.Hour

	// maxMessageRunes bounds how much of Linear's error text goes into an
	// Error.Message, which is stored with the invocation.
	maxMessageRunes = 500

	// apiKeyPrefix starts every Linear personal API key. Such keys are sent
	// as they are; anything else is an OAuth access token.
	apiKeyPrefix = "lin_api_"

	// codeAlreadyExists classifies Linear's refusal to create an object
	// whose client-chosen id is taken. create_issue and add_comment turn it
	// into a conflict; elsewhere it is a plain failure.
	codeAlreadyExists = "already_exists"

	// codeNotFound classifies a read of an id Linear does not know.
	codeNotFound = "not_found"
)

// graphQLCode matches the SCREAMING_SNAKE_CASE codes Linear puts in an
// error's extensions. Anything else is not trusted into Error.Code.
var graphQLCode = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// retryableGraphQLCodes are the error codes that describe a passing problem
// on Linear's side rather than something wrong with the call. Unknown codes
// are not retried: a call Linear refused for a reason this source does not
// know would most likely be refused again.
var retryableGraphQLCodes = map[string]bool{
	"INTERNAL_SERVER_ERROR": true,
	"INTERNAL_ERROR":        true,
	"LOCK_TIMEOUT":          true,
}

// Ranks of a classified GraphQL error, lowest first. When one answer carries
// several errors, the lowest rank decides: a rejected token matters more
// than anything else the answer says, and one permanent error makes a retry
// pointless whatever else went wrong.
const (
	rankUnauthorized = iota
	rankForbidden
	rankRateLimited
	rankPermanent
	rankTransient
)

// operation is one GraphQL document with its variables.
type operation struct {
	// name is the operation name declared in query, used in messages.
	name      string
	query     string
	variables map[string]any
	// mutation marks operations that change data. A mutation answered
	// without data or errors is not retried blindly.
	mutation bool
}

type graphQLRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName,omitempty"`
	Variables     map[string]any `json:"variables,omitempty"`
}

type graphQLResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []graphQLError  `json:"errors"`
}

// graphQLError is one entry of a response's errors array. Extensions are
// kept raw and read leniently: an unexpected shape there must not hide the
// message.
type graphQLError struct {
	Message    string          `json:"message"`
	Extensions json.RawMessage `json:"extensions"`
	// Path names the field the error is about, from the operation's root
	// field down, e.g. ["issueCreate","issue","assignee"].
	Path []json.RawMessage `json:"path"`
}

// graphQLExtensions is the part of Linear's error extensions that drives
// classification, e.g. {"type":"invalid input","code":"INVALID_INPUT",
// "userPresentableMessage":"..."}.
type graphQLExtensions struct {
	Code                   string `json:"code"`
	Type                   string `json:"type"`
	UserPresentableMessage string `json:"userPresentableMessage"`
}

// do sends op and decodes the answer's data into out. A non-nil error is an
// *executors.Error.
func (s *client) do(ctx context.Context, ec executors.ExecContext, op operation, out any) error {
	if ec.Token == "" {
		return &executors.Error{
			Code:    "not_authed",
			Message: "no Linear token is available; connect Linear first",
		}
	}
	auth, err := authorization(ec)
	if err != nil {
		return err
	}

	body, err := json.Marshal(graphQLRequest{Query: op.query, OperationName: op.name, Variables: op.variables})
	if err != nil {
		return fmt.Errorf("linear: encoding %s request: %w", op.name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.baseURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("linear: building %s request: %w", op.name, err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if ec.IdempotencyKey != "" {
		// Linear ignores the header; the client-chosen ids of create inputs
		// are what make creates safe.
		req.Header.Set(httpsource.IdempotencyKeyHeader, ec.IdempotencyKey)
	}

	resp, err := s.http.Do(req)
	if err != nil {
		return httpsource.TransportError(ctx, "Linear", err)
	}
	defer httpsource.CloseBody(resp.Body, maxResponseBytes)

	raw, readErr := httpsource.ReadBody(resp.Body, maxResponseBytes)
	// Redacting the whole answer, before any of it is parsed or cut short,
	// keeps the token out of messages and of stored results alike.
	if ec.Token != "" {
		raw = bytes.ReplaceAll(raw, []byte(ec.Token), []byte(httpsource.Redacted))
	}
	var answer graphQLResponse
	parsed := readErr == nil && json.Unmarshal(raw, &answer) == nil
	hasErrors := parsed && len(answer.Errors) > 0

	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		e := &executors.Error{
			Code:    executors.CodeUnauthorized,
			Message: "Linear rejected the token (HTTP 401)",
		}
		if hasErrors {
			e.Message += ": " + describe(answer.Errors[0])
		}
		return e
	case resp.StatusCode == http.StatusTooManyRequests:
		return rateLimitError("Linear rate-limited the call (HTTP 429)", resp.Header)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		if hasErrors {
			e := graphQLFailure(answer.Errors, resp.Header)
			if resp.StatusCode >= 500 && e.Code != executors.CodeUnauthorized && e.Code != "forbidden" {
				e.Retryable = true
			}
			return e
		}
		return statuses.Error(resp.StatusCode, resp.Header, op.name, "")
	}

	if errors.Is(readErr, httpsource.ErrTooLarge) {
		return &executors.Error{
			Code:      "invalid_response",
			Message:   fmt.Sprintf("Linear's answer to %s is larger than %d bytes", op.name, maxResponseBytes),
			Retryable: true,
		}
	}
	if readErr != nil {
		return httpsource.TransportError(ctx, "Linear", readErr)
	}
	if !parsed {
		return &executors.Error{
			Code:      "invalid_response",
			Message:   fmt.Sprintf("Linear answered %s with HTTP %d and a body that is not a GraphQL response", op.name, resp.StatusCode),
			Retryable: true,
		}
	}
	if hasErrors && !(op.mutation && ranWithFieldErrors(answer)) {
		return graphQLFailure(answer.Errors, resp.Header)
	}
	if isNull(answer.Data) {
		if op.mutation {
			return &executors.Error{
				Code:    "mutation_failed",
				Message: fmt.Sprintf("Linear answered %s with neither data nor errors", op.name),
			}
		}
		return &executors.Error{
			Code:      "invalid_response",
			Message:   fmt.Sprintf("Linear answered %s with neither data nor errors", op.name),
			Retryable: true,
		}
	}
	if err := json.Unmarshal(answer.Data, out); err != nil {
		return &executors.Error{
			Code:      "invalid_response",
			Message:   fmt.Sprintf("Linear's answer to %s has an unexpected shape", op.name),
			Retryable: true,
		}
	}
	return nil
}

// ranWithFieldErrors reports whether a mutation's answer carries data and
// only errors about fields below the mutation (a path of two or more, such
// as an assignee the token cannot read back): the mutation ran, and its
// payload, which the action checks for success and an id, decides. Taken
// as a failure, an issue Linear created would be recorded as failed, and
// no retry would look for it.
func ranWithFieldErrors(answer graphQLResponse) bool {
	if isNull(answer.Data) {
		return false
	}
	for _, g := range answer.Errors {
		if len(g.Path) < 2 {
			return false
		}
	}
	return true
}

// authorization returns the Authorization header value for ec's token.
// Linear takes personal API keys as they are and OAuth access tokens as
// Bearer tokens; when the credential does not say which it is, the key
// prefix decides.
func authorization(ec executors.ExecContext) (string, error) {
	switch ec.TokenKind {
	case executors.TokenKindAPIKey:
		return ec.Token, nil
	case executors.TokenKindOAuth:
		return "Bearer " + ec.Token, nil
	case "":
		if strings.HasPrefix(ec.Token, apiKeyPrefix) {
			return ec.Token, nil
		}
		return "Bearer " + ec.Token, nil
	default:
		return "", &executors.Error{
			Code:    "invalid_token_kind",
			Message: fmt.Sprintf("the Linear credential has token kind %q; want %q or %q", ec.TokenKind, executors.TokenKindAPIKey, executors.TokenKindOAuth),
		}
	}
}

// graphQLFailure classifies a non-empty errors array by its most decisive
// entry (see the rank constants).
func graphQLFailure(errs []graphQLError, header http.Header) *executors.Error {
	var (
		best     *executors.Error
		bestRank int
	)
	for _, g := range errs {
		e, rank := classifyGraphQLError(g, header)
		if best == nil || rank < bestRank {
			best, bestRank = e, rank
		}
	}
	if len(errs) > 1 {
		best.Message += fmt.Sprintf(" (and %d more errors)", len(errs)-1)
	}
	return best
}

// classifyGraphQLError classifies one GraphQL error and returns its rank.
func classifyGraphQLError(g graphQLError, header http.Header) (*executors.Error, int) {
	code := graphQLErrorCode(g)
	text := describe(g)

	switch code {
	case "AUTHENTICATION_ERROR":
		return &executors.Error{
			Code:    executors.CodeUnauthorized,
			Message: "Linear rejected the token: " + text,
		}, rankUnauthorized
	case "FORBIDDEN":
		return &executors.Error{
			Code:    "forbidden",
			Message: "Linear refused access; the token lacks permission for this call: " + text,
		}, rankForbidden
	case "RATELIMITED":
		return rateLimitError("Linear rate-limited the call: "+text, header), rankRateLimited
	}
	if retryableGraphQLCodes[code] {
		return &executors.Error{
			Code:      strings.ToLower(code),
			Message:   "Linear had a temporary problem: " + text,
			Retryable: true,
		}, rankTransient
	}

	lower := strings.ToLower(text)
	switch {
	case strings.Contains(lower, "already exists") || strings.Contains(lower, "duplicate"):
		return &executors.Error{Code: codeAlreadyExists, Message: "Linear reports the object already exists: " + text}, rankPermanent
	case strings.Contains(lower, "not found") || strings.Contains(lower, "could not find"):
		return &executors.Error{Code: codeNotFound, Message: "Linear could not find what the call refers to: " + text}, rankPermanent
	}

	e := &executors.Error{Code: "graphql_error", Message: "Linear rejected the call: " + text}
	if code != "" {
		e.Code = strings.ToLower(code)
		e.Message = "Linear rejected the call with " + code + ": " + text
	}
	return e, rankPermanent
}

// graphQLErrorCode returns the error's code, from extensions.code or, when
// that is missing, from extensions.type ("invalid input" → INVALID_INPUT),
// or "" when neither is a well-formed code.
func graphQLErrorCode(g graphQLError) string {
	ext := g.extensions()
	for _, c := range []string{ext.Code, strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(ext.Type)), " ", "_")} {
		if graphQLCode.MatchString(c) {
			return c
		}
	}
	return ""
}

func (g graphQLError) extensions() graphQLExtensions {
	var ext graphQLExtensions
	if len(g.Extensions) > 0 {
		// A field of an unexpected type is left empty; the rest still count.
		_ = json.Unmarshal(g.Extensions, &ext)
	}
	return ext
}

// describe renders a GraphQL error's message, and Linear's message for
// users when it adds something, on one bounded line.
func describe(g graphQLError) string {
	text := strings.TrimSpace(g.Message)
	if upm := strings.TrimSpace(g.extensions().UserPresentableMessage); upm != "" && !strings.Contains(text, upm) {
		if text == "" {
			text = upm
		} else {
			text += " (" + upm + ")"
		}
	}
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return "no message"
	}
	if utf8.RuneCountInString(text) > maxMessageRunes {
		text = string([]rune(text)[:maxMessageRunes]) + "…"
	}
	return text
}

// statuses words Linear's non-2xx answers, other than 401 and 429, that
// carry no GraphQL errors.
var statuses = httpsource.Statuses{
	Provider: "Linear",
	Hints: map[int]httpsource.Hint{
		http.StatusForbidden: {Code: "forbidden", Message: "Linear refused access (HTTP 403); the token lacks permission for this call"},
	},
	RateLimitWait: defaultRetryAfter,
	MaxWait:       maxRetryAfter,
}

// budget names the headers of one of Linear's rate-limit budgets: how much
// of it is left and when it resets.
type budget struct{ remaining, reset string }

// Linear's rate-limit budgets: requests, query complexity and the limit of
// one endpoint (sent only for the endpoints that have one). Any of them can
// be the one a RATELIMITED answer ran out of.
var (
	requestsBudget   = budget{"X-RateLimit-Requests-Remaining", "X-RateLimit-Requests-Reset"}
	complexityBudget = budget{"X-RateLimit-Complexity-Remaining", "X-RateLimit-Complexity-Reset"}
	endpointBudget   = budget{"X-RateLimit-Endpoint-Requests-Remaining", "X-RateLimit-Endpoint-Requests-Reset"}
)

// rateLimitError is the error of a call Linear rate-limited, retryable
// after rateLimitWait's wait. When only the endpoint's own budget is spent
// it is an OtherLimit: the call waits, and the organization's other Linear
// calls, which that budget does not hold back, go on.
func rateLimitError(msg string, header http.Header) *executors.Error {
	wait, endpointOnly := rateLimitWait(header)
	return &executors.Error{Code: "ratelimited", Message: msg, Retryable: true, RetryAfter: wait, OtherLimit: endpointOnly}
}

// rateLimitWait says how long to wait after Linear rate-limited a call:
// Retry-After when present, else until the exhausted budgets reset, else
// defaultRetryAfter. A budget whose Remaining header shows room for the
// call (for complexity, at least the refused query's X-Complexity when
// Linear says it) is not waited for: the requests window resetting in an
// hour must not park a call refused for complexity that resets in seconds,
// nor its early reset send the call again before the complexity is back.
// A budget without a Remaining header may be the exhausted one; the wait
// is the latest reset of those that may be. endpointOnly is true when the
// endpoint's budget is the only one waited for.
func rateLimitWait(header http.Header) (wait time.Duration, endpointOnly bool) {
	if d := httpsource.RetryAfter(header, 0, maxRetryAfter); d > 0 {
		return d, false
	}
	now := time.Now()
	endpointOnly = true
	for _, b := range []budget{requestsBudget, complexityBudget, endpointBudget} {
		d, ok := parseReset(header.Get(b.reset), now)
		if ok && !hasRoom(header, b) {
			wait = max(wait, d)
			endpointOnly = endpointOnly && b == endpointBudget
		}
	}
	if wait > 0 {
		return wait, endpointOnly
	}
	return defaultRetryAfter, false
}

// hasRoom reports whether b's Remaining header shows room for the refused
// call: at least one request, or, for complexity, at least the query's cost
// (X-Complexity) when Linear gave it, and more than nothing otherwise.
func hasRoom(header http.Header, b budget) bool {
	remaining, err := strconv.ParseFloat(strings.TrimSpace(header.Get(b.remaining)), 64)
	if err != nil {
		return false
	}
	if b == complexityBudget {
		if cost, err := strconv.ParseFloat(strings.TrimSpace(header.Get("X-Complexity")), 64); err == nil && cost > 0 {
			return remaining >= cost
		}
	}
	return remaining > 0
}

// parseReset reads one of Linear's reset headers, a UTC epoch time in
// milliseconds, as the delay from now, capped at maxRetryAfter. A value
// too small to be milliseconds is taken as seconds. A reset in the past is
// not usable.
func parseReset(value string, now time.Time) (time.Duration, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	at := time.UnixMilli(n)
	if n < 1e11 {
		at = time.Unix(n, 0)
	}
	d := at.Sub(now)
	if d <= 0 {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// errorCode returns the code of a classified error, or "".
func errorCode(err error) string {
	var e *executors.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
