package database_test

import (
	"net"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
)

// TestQuery_ServerWithoutHoldCursors: each query's transaction declares a
// cursor WITH HOLD, which a server speaking Postgres's protocol without
// such cursors refuses: every query fails there. The error says it is
// outboxd's cursor the server refused, and why outboxd needs it, rather
// than only the server's text, which reads as if the agent's SQL were
// wrong.
func TestQuery_ServerWithoutHoldCursors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveWithoutHoldCursors(c)
		}
	}()

	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "compatible"})
	rawURL := "postgres://agent:pw-of-the-agent@" + ln.Addr().String() + "/app?sslmode=disable"
	_, e := query(t, src, rawURL, `SELECT 1`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeQueryError, e.Code, e.Message)
	require.False(t, e.Retryable)
	require.Contains(t, e.Message, `database "compatible" cannot run queries through outboxd: the server refused the cursor WITH HOLD that outboxd declares`)
	require.Contains(t, e.Message, "PREPARE TRANSACTION")
	require.Contains(t, e.Message, "unimplemented: DECLARE CURSOR WITH HOLD is not supported (SQLSTATE 0A000)", "the server's own text")
}

// serveWithoutHoldCursors speaks just enough of the protocol to take a
// connection, a transaction and its first statements, and refuses a
// DECLARE ... WITH HOLD as such servers do.
func serveWithoutHoldCursors(c net.Conn) {
	defer c.Close()
	be := pgproto3.NewBackend(c, c)
	for {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return
		}
		if _, ok := msg.(*pgproto3.StartupMessage); ok {
			break
		}
		if _, err := c.Write([]byte("N")); err != nil { // no TLS, no GSS
			return
		}
	}
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "13.0"})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if be.Flush() != nil {
		return
	}
	for {
		msg, err := be.Receive()
		if err != nil {
			return
		}
		if p, ok := msg.(*pgproto3.Parse); ok && strings.Contains(p.Query, "pg_has_role") {
			// The role's check, in one round trip: not privileged.
			for range 4 { // Bind, Describe, Execute, Sync
				if _, err := be.Receive(); err != nil {
					return
				}
			}
			// Five booleans and a name, then four texts: what the role
			// can execute, use and read that connects (none).
			fields := make([]pgproto3.FieldDescription, 9)
			for i := range fields {
				fields[i] = pgproto3.FieldDescription{Name: []byte("?column?"), DataTypeOID: 16, DataTypeSize: 1, TypeModifier: -1}
				if i >= 5 {
					fields[i].DataTypeOID, fields[i].DataTypeSize = 25, -1 // text
				}
			}
			fields[1].DataTypeOID, fields[1].DataTypeSize = 19, 64 // name
			be.Send(&pgproto3.ParseComplete{})
			be.Send(&pgproto3.BindComplete{})
			be.Send(&pgproto3.RowDescription{Fields: fields})
			be.Send(&pgproto3.DataRow{Values: [][]byte{[]byte("f"), nil, []byte("f"), []byte("f"), []byte("f"), nil, nil, nil, nil}})
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			if be.Flush() != nil {
				return
			}
			continue
		}
		q, ok := msg.(*pgproto3.Query)
		if !ok {
			return // Terminate, or what the test does not need
		}
		sql := strings.ToLower(q.String)
		switch {
		case strings.HasPrefix(sql, "begin"):
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("BEGIN")})
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'T'})
		case strings.HasPrefix(sql, "rollback"):
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("ROLLBACK")})
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		case strings.Contains(sql, "set_config"):
			be.Send(&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("set_config"), DataTypeOID: 25, DataTypeSize: -1, TypeModifier: -1}}})
			be.Send(&pgproto3.DataRow{Values: [][]byte{[]byte("10000")}})
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
			if strings.Contains(sql, "with hold") {
				be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", Code: "0A000", Message: "unimplemented: DECLARE CURSOR WITH HOLD is not supported"})
				be.Send(&pgproto3.ReadyForQuery{TxStatus: 'E'})
			} else {
				be.Send(&pgproto3.ReadyForQuery{TxStatus: 'T'})
			}
		default:
			be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", Code: "42601", Message: "not understood by the test server"})
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'E'})
		}
		if be.Flush() != nil {
			return
		}
	}
}
