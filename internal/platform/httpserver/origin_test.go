package httpserver

import (
	"crypto/tls"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		tls       bool
		proto     string
		host      string
		forwarded bool
		want      string
	}{
		{name: "plain", want: "http://outboxd.internal:8080"},
		{name: "tls", tls: true, want: "https://outboxd.internal:8080"},
		{name: "forwarded headers ignored unless trusted", proto: "https", host: "outboxd.example.com", want: "http://outboxd.internal:8080"},
		{name: "trusted proxy", proto: "https", host: "outboxd.example.com", forwarded: true, want: "https://outboxd.example.com"},
		{name: "first of several", proto: "https, http", host: "outboxd.example.com, proxy.internal", forwarded: true, want: "https://outboxd.example.com"},
		{name: "unknown scheme kept out", proto: "javascript", forwarded: true, want: "http://outboxd.internal:8080"},
		{name: "a host that would change the URL kept out", host: "evil.example/x?", forwarded: true, want: "http://outboxd.internal:8080"},
		{name: "user info kept out", host: "user@evil.example", forwarded: true, want: "http://outboxd.internal:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/mcp", nil)
			r.Host = "outboxd.internal:8080"
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			if tc.proto != "" {
				r.Header.Set("X-Forwarded-Proto", tc.proto)
			}
			if tc.host != "" {
				r.Header.Set("X-Forwarded-Host", tc.host)
			}
			require.Equal(t, tc.want, Origin(r, tc.forwarded))
		})
	}
}
