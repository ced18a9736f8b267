package database

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/platform/netguard"
)

// Error codes of database calls.
const (
	CodeInvalidParams     = "invalid_params"
	CodeUnknownAction     = "unknown_action"
	CodeNotFound          = "not_found"
	CodeInvalidURL        = "invalid_database_url"
	CodeAddressNotAllowed = "address_not_allowed"
	// CodeReadOnly: the statement tried to write and the read-only
	// transaction refused it.
	CodeReadOnly = "read_only_transaction"
	// CodeStatementTimeout: the statement ran past statement_timeout.
	CodeStatementTimeout = "statement_timeout"
	// CodeQueryError: the database refused the statement (syntax, missing
	// table, permission, a bad parameter...). Running it again would not
	// help.
	CodeQueryError = "query_error"
	// CodeResultTooLarge: the first row of the result (or another
	// message of the server) is larger than MaxMessageBytes, so it was
	// not read.
	CodeResultTooLarge = "result_too_large"
	// CodeConnectionRefused: the server refused the login (password, role,
	// database name).
	CodeConnectionRefused = "connection_refused"
	// CodePrivilegedRole: the URL's role is a superuser, can become one,
	// or may run programs or read or write files on the server
	// (PrivilegedRoleError).
	CodePrivilegedRole = "privileged_role"
	// CodeUnavailable: the server could not be reached or was busy; the
	// call is retried.
	CodeUnavailable = "database_unavailable"
)

// scrubber removes a database URL and its password from error texts, and
// makes them valid UTF-8: a SQL_ASCII database sends its bytes as they
// are, which an invocation's error could not store.
type scrubber []string

func newScrubber(rawURL string) scrubber {
	sc := scrubber{}
	if rawURL == "" {
		return sc
	}
	sc = append(sc, rawURL)
	if u, err := url.Parse(rawURL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && len(pw) >= 4 {
			sc = append(sc, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
	}
	return sc
}

func (sc scrubber) clean(s string) string {
	for _, secret := range sc {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// classify turns a failure into an *executors.Error whose text holds
// neither the URL nor its password: the server's own message for what it
// refused, a short reason for what failed on the way.
func (s *source) classify(ctx context.Context, err error, sc scrubber) error {
	var e *executors.Error
	if errors.As(err, &e) {
		return e
	}
	var early *cancelledEarlyError
	if errors.As(err, &early) {
		return &executors.Error{Code: CodeQueryError, Message: "the statement was cancelled on the server before its statement_timeout (pg_cancel_backend, by a person or another session of the role): " +
			serverText(early.err, sc)}
	}
	var hold *holdCursorError
	if errors.As(err, &hold) {
		e := classifyPg(hold.err, s.db, sc)
		if e.Code == CodeQueryError {
			e.Message = fmt.Sprintf("database %q cannot run queries through outboxd: the server refused the cursor WITH HOLD that outboxd declares in each query's transaction, "+
				"so that the agent's statement cannot turn it into a prepared transaction (PREPARE TRANSACTION); outboxd runs queries only on a server that has such cursors "+
				"(list_tables and describe_table still work): %s", s.db.Name, e.Message)
		}
		return e
	}
	var privileged *PrivilegedRoleError
	if errors.As(err, &privileged) {
		return &executors.Error{Code: CodePrivilegedRole, Message: fmt.Sprintf("database %q: %s", s.db.Name, sc.clean(privileged.Error())), Cause: privileged}
	}
	var check *roleCheckError
	if errors.As(err, &check) {
		e := s.classify(ctx, check.err, sc).(*executors.Error)
		if !e.Retryable {
			e.Message = fmt.Sprintf("database %q: outboxd could not check what the URL's role may do (see privileged_role), so it uses no connection of it: %s", s.db.Name, e.Message)
		}
		return e
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return classifyPg(pgErr, s.db, sc)
	}
	var tooLarge *pgproto3.ExceededMaxBodyLenErr
	if errors.As(err, &tooLarge) {
		return &executors.Error{Code: CodeResultTooLarge, Cause: err,
			Message: fmt.Sprintf("a row of the result is larger than %d KiB (it has %d bytes), the most outboxd reads of one row; a result keeps about %d KiB: "+
				"select less of it, such as left(column, 1000) or one key of a document", MaxMessageBytes>>10, tooLarge.ActualBodyLen, s.client.cfg.MaxResultBytes/1024)}
	}
	if errors.Is(err, netguard.ErrNotAllowed) {
		var addrErr *netguard.AddrError
		msg := "the database URL leads to a private or internal address; set connectors.allow_private_networks to allow it"
		if errors.As(err, &addrErr) {
			msg = fmt.Sprintf("the database URL leads to %s, a private or internal address; set connectors.allow_private_networks to allow it", addrErr.Addr)
		}
		return &executors.Error{Code: CodeAddressNotAllowed, Message: msg, Cause: netguard.ErrNotAllowed}
	}
	for _, refused := range []error{errCopy, errNotices} {
		if errors.Is(err, refused) {
			return &executors.Error{Code: CodeQueryError, Message: refused.Error(), Cause: refused}
		}
	}
	if errors.Is(err, errOwnDatabase) {
		return &executors.Error{Code: CodeAddressNotAllowed, Message: errOwnDatabase.Error(), Cause: errOwnDatabase}
	}
	if errors.Is(err, errClosed) {
		return &executors.Error{Code: CodeUnavailable, Message: "outboxd is shutting down", Retryable: true, Cause: errClosed}
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The call's own deadline (worker.call_timeout) came before the
		// statement_timeout: the statement would be as slow again.
		return &executors.Error{Code: CodeStatementTimeout, Cause: ctx.Err(),
			Message: "the call ran out of time before the statement finished: lower the database's statement_timeout below worker.call_timeout"}
	case ctx.Err() != nil: // shutting down: another attempt will run it
		return &executors.Error{Code: CodeUnavailable, Message: "the call was cancelled", Retryable: true, Cause: ctx.Err()}
	}
	if reason, ok := tlsFailure(err); ok {
		return &executors.Error{Code: CodeConnectionRefused, Cause: err,
			Message: fmt.Sprintf("database %q: TLS failed: %s", s.db.Name, sc.clean(reason))}
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || isNetwork(err) || errors.Is(err, context.DeadlineExceeded) {
		return &executors.Error{Code: CodeUnavailable, Retryable: true,
			Message: fmt.Sprintf("cannot reach database %q: %s", s.db.Name, networkReason(err))}
	}
	if errors.Is(err, errInvalidURL) {
		return &executors.Error{Code: CodeInvalidURL, Message: sc.clean(err.Error())}
	}
	return &executors.Error{Code: CodeUnavailable, Retryable: true, Message: sc.clean(err.Error())}
}

// holdCursorError is a server's refusal of the cursor WITH HOLD each
// query's transaction declares (see inReadOnlyTx): a server that speaks
// Postgres's protocol without having such cursors refuses every query.
type holdCursorError struct{ err *pgconn.PgError }

func (e *holdCursorError) Error() string { return e.err.Error() }

// cancelledEarlyError is the server's query_canceled for a statement
// that had not run for its statement_timeout yet: someone cancelled it.
type cancelledEarlyError struct{ err *pgconn.PgError }

func (e *cancelledEarlyError) Error() string { return e.err.Error() }

// maxServerText bounds what an error keeps of the server's text: it can
// quote a value of the agent's statement whole (invalid input syntax for
// type integer: "..."), and the invocation's error is stored and logged.
const maxServerText = 2048

// clip shortens s to at most n bytes, at a character boundary, with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// serverText is what an error keeps of the server's: its message, detail
// and hint, scrubbed and clipped, and its SQLSTATE.
func serverText(pgErr *pgconn.PgError, sc scrubber) string {
	text := pgErr.Message
	if pgErr.Detail != "" {
		text += " (" + pgErr.Detail + ")"
	}
	if pgErr.Hint != "" {
		text += "; hint: " + pgErr.Hint
	}
	return fmt.Sprintf("%s (SQLSTATE %s)", clip(sc.clean(text), maxServerText), pgErr.Code)
}

// classifyPg classifies an error the server sent.
func classifyPg(pgErr *pgconn.PgError, db Database, sc scrubber) *executors.Error {
	text := serverText(pgErr, sc)
	class := pgErr.Code[:2]
	switch {
	case pgErr.Code == "25006": // read_only_sql_transaction
		return &executors.Error{Code: CodeReadOnly, Message: "the statement writes, and queries run in a read-only transaction: " + text}
	case pgErr.Code == "57014": // query_canceled
		return &executors.Error{Code: CodeStatementTimeout, Message: fmt.Sprintf("the statement was cancelled after the statement_timeout of %s: %s", db.StatementTimeout, text)}
	case pgErr.Code == "08P01": // protocol_violation: params that do not match the placeholders
		return &executors.Error{Code: CodeQueryError, Message: text}
	case class == "28" || pgErr.Code == "3D000": // invalid authorization, unknown database
		return &executors.Error{Code: CodeConnectionRefused, Message: fmt.Sprintf("database %q refused the connection: %s", db.Name, text)}
	case class == "08" || class == "53" || class == "57" || pgErr.Code == "40001" || pgErr.Code == "40P01" || pgErr.Code == "55P03":
		return &executors.Error{Code: CodeUnavailable, Retryable: true, Message: fmt.Sprintf("database %q: %s", db.Name, text)}
	}
	return &executors.Error{Code: CodeQueryError, Message: text}
}

// tlsFailure reports why TLS failed when it failed the same way at every
// attempt: the server's certificate is not accepted (sslmode verify-ca
// or verify-full: an authority the system does not trust, as managed
// databases' own are, another host name, an expired certificate), or the
// server does not take TLS that sslmode require and above ask for.
func tlsFailure(err error) (string, bool) {
	var (
		verify    *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		refused   error
	)
	switch {
	case errors.As(err, &verify):
		refused = verify.Err
	case errors.As(err, &unknownCA):
		refused = unknownCA
	case errors.As(err, &hostname):
		refused = hostname
	case errors.As(err, &invalid):
		refused = invalid
	case strings.Contains(err.Error(), "server refused TLS connection"): // pgconn's text: it has no type
		return "the server takes no TLS connection, and the URL's sslmode requires TLS", true
	default:
		return "", false
	}
	return "the server's certificate is not accepted: " + refused.Error(), true
}

func isNetwork(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr)
}

// networkReason says in a few words why a connection failed, without the
// addresses the error names.
func networkReason(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return "its host name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return "timed out"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "timed out"
	}
	return "network error"
}
