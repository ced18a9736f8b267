package httpserver

import (
	"net/http"
	"strings"
)

// Origin is the scheme and host a client sent r to, as in
// "https://outboxd.example.com": the connection's (https when it is TLS)
// and the Host header, or with forwarded (http.trust_forwarded_for, where
// a proxy in front sets them) the first X-Forwarded-Proto and
// X-Forwarded-Host when they are usable. What outboxd tells a client to
// come back to (the MCP resource, the console's pages, the sign-in's
// redirect) starts with it.
func Origin(r *http.Request, forwarded bool) string {
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if forwarded {
		if p := firstValue(r.Header.Get("X-Forwarded-Proto")); p == "https" || p == "http" {
			scheme = p
		}
		if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" && !strings.ContainsFunc(h, notInHost) {
			host = h
		}
	}
	return scheme + "://" + host
}

// firstValue is the first of a header's comma-separated values.
func firstValue(h string) string {
	first, _, _ := strings.Cut(h, ",")
	return strings.TrimSpace(first)
}

// notInHost reports a character that has no place in a host and port: one
// that would end the authority of a URL or make it another.
func notInHost(r rune) bool {
	return r <= ' ' || r == 0x7f || strings.ContainsRune(`/\?#@`, r)
}
