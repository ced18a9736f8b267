// Package providertest is what the loopback provider fakes (githubtest,
// lineartest, sentrytest, slacktest) share: a test server closed when the
// test ends, a record of every request it saw, an intercept through which
// a test answers in a fake's place, and the JSON and stalled answers the
// providers give.
package providertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// Request is what a server saw of one call.
type Request struct {
	Method string
	// Path is the path as sent, still escaped.
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// Log is a list of what a fake saw, in order. Its methods are safe for
// concurrent use; the zero Log is empty and ready.
type Log[T any] struct {
	mu    sync.Mutex
	items []T
}

// Add appends v.
func (l *Log[T]) Add(v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append(l.items, v)
}

// All returns what was added, oldest first, in a slice of its own.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.items)
}

// Server is a loopback HTTP server in front of a fake's handler. Its
// methods are safe for concurrent use.
type Server struct {
	srv      *httptest.Server
	next     http.Handler
	requests Log[Request]

	mu        sync.Mutex
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

// New starts a server, closed when t ends, that records each request and
// then lets next answer it.
func New(t testing.TB, next http.Handler) *Server {
	s := &Server{next: next}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

// ServeHTTP records r, with copies of its header and body, and then lets
// the fake's handler answer, reading the body again from r.Body. It is
// exported so that a fake can also be served behind another handler and
// still record what reaches it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.requests.Add(Request{
		Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query(), Header: r.Header.Clone(), Body: body,
	})
	s.next.ServeHTTP(w, r)
}

// URL is the server's root, with no path.
func (s *Server) URL() string { return s.srv.URL }

// Client is a client that reaches the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close stops the server: calls are then refused.
func (s *Server) Close() { s.srv.Close() }

// Requests returns what the server saw, in order.
func (s *Server) Requests() []Request { return s.requests.All() }

// Intercept lets h answer requests in the fake's place; h returns false
// to let the fake answer. Requests are recorded either way.
func (s *Server) Intercept(h func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intercept = h
}

// Intercepted runs the intercept, if any, and reports whether it
// answered. A fake's handler calls it at the point where a test's answer
// replaces its own: after what the provider sets on every answer, before
// its checks.
func (s *Server) Intercepted(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	intercept := s.intercept
	s.mu.Unlock()
	return intercept != nil && intercept(w, r)
}

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Stall holds an answer until r's client gives up, as when the provider
// acted but its answer is lost to the client's timeout. It waits at most
// limit, so that a client that never gives up fails its test instead of
// blocking the server's Close forever.
func Stall(r *http.Request, limit time.Duration) {
	select {
	case <-r.Context().Done():
	case <-time.After(limit):
	}
}
