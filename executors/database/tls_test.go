package database_test

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
)

// TestQuery_TLSFailuresSayWhy: a server whose certificate the URL's
// sslmode does not accept (verify-full and a certificate of a private
// authority, as managed databases have), or that refuses TLS the URL
// requires, fails the same way at every attempt: the call says why and
// is not retried, rather than "network error" retried until the
// attempts ran out.
func TestQuery_TLSFailuresSayWhy(t *testing.T) {
	serverCert, serverKey := selfSigned(t, "db.example.com")
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	require.NoError(t, err)
	listen := func(answer byte) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					_ = c.SetDeadline(time.Now().Add(10 * time.Second))
					if _, err := io.ReadFull(c, make([]byte, 8)); err != nil { // SSLRequest
						return
					}
					if _, err := c.Write([]byte{answer}); err != nil || answer != 'S' {
						return
					}
					_ = tls.Server(c, &tls.Config{Certificates: []tls.Certificate{pair}}).Handshake()
				}()
			}
		}()
		return ln.Addr().String()
	}
	withTLS, withoutTLS := listen('S'), listen('N')

	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "managed"})
	for _, tc := range []struct{ url, want string }{
		{"postgres://outboxd:pw-of-the-url@" + withTLS + "/app?sslmode=verify-full", "certificate"},
		{"postgres://outboxd:pw-of-the-url@" + withTLS + "/app?sslmode=verify-ca", "certificate"},
		{"postgres://outboxd:pw-of-the-url@" + withoutTLS + "/app?sslmode=require", "takes no TLS"},
	} {
		_, e := query(t, src, tc.url, `SELECT 1`)
		require.NotNil(t, e, tc.url)
		require.Equal(t, database.CodeConnectionRefused, e.Code, "%s: %v", tc.url, e)
		require.False(t, e.Retryable, tc.url)
		require.Contains(t, e.Message, tc.want, tc.url)
		require.NotContains(t, e.Message, "pw-of-the-url")
	}
}
