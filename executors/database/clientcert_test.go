package database_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
)

// TestQuery_NoClientCertificateFromOutboxdsHost: outboxd's own client
// certificate (PGSSLCERT and PGSSLKEY, or ~/.postgresql/postgresql.crt,
// which the driver reads by default) is outboxd's credential: a
// registered database's server, which asks for one, gets none, so that
// an organization cannot log in with it where certificates authenticate
// (another database of outboxd's own server, say).
func TestQuery_NoClientCertificateFromOutboxdsHost(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	clientCert, clientKey := selfSigned(t, "outboxd")
	require.NoError(t, os.WriteFile(certFile, clientCert, 0o600))
	require.NoError(t, os.WriteFile(keyFile, clientKey, 0o600))
	t.Setenv("PGSSLCERT", certFile)
	t.Setenv("PGSSLKEY", keyFile)

	// A server that takes TLS, asks for a client certificate and notes
	// whether one came.
	serverCert, serverKey := selfSigned(t, "db.example.com")
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var handshakes, withCert atomic.Int32
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
				if _, err := c.Write([]byte("S")); err != nil {
					return
				}
				tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert})
				if tc.Handshake() != nil {
					return
				}
				handshakes.Add(1)
				if len(tc.ConnectionState().PeerCertificates) > 0 {
					withCert.Add(1)
				}
			}()
		}
	}()

	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "certs"})
	_, e := query(t, src, "postgres://outboxd:pw-unused@"+ln.Addr().String()+"/app?sslmode=require&connect_timeout=5", `SELECT 1`)
	require.NotNil(t, e, "the fake server answers no query")
	require.Positive(t, handshakes.Load(), "the TLS handshake took place")
	require.Zero(t, withCert.Load(), "no client certificate was sent")
}

// selfSigned returns a PEM certificate and key for name.
func selfSigned(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
