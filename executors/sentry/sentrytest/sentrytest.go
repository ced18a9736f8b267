// Package sentrytest is a loopback Sentry REST API for tests, under /api/0,
// over in-memory issues of one organization. It answers with Sentry's
// JSON, trailing-slash routes, Link pagination headers and {"detail": ...}
// error bodies, and records every request. Intercept lets a test answer in
// its place, with canned answers or failures.
package sentrytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/outboxd/outboxd/executors/providertest"
)

// Request is what the server saw of one call.
type Request = providertest.Request

// Server is a loopback Sentry. Its methods are safe for concurrent use.
type Server struct {
	srv *providertest.Server

	mu     sync.Mutex
	issues map[string]map[string]any
}

// New starts a server, closed when t ends. It accepts any bearer token.
func New(t testing.TB) *Server {
	s := &Server{issues: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/0/projects/{org}/{project}/issues/{$}", s.listIssues)
	mux.HandleFunc("GET /api/0/issues/{id}/{$}", s.getIssue)
	mux.HandleFunc("GET /api/0/organizations/{org}/issues/{id}/{$}", s.getIssue)
	mux.HandleFunc("PUT /api/0/issues/{id}/{$}", s.updateIssue)
	mux.HandleFunc("PUT /api/0/organizations/{org}/issues/{id}/{$}", s.updateIssue)
	s.srv = providertest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.srv.Intercepted(w, r) {
			return
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			WriteJSON(w, http.StatusUnauthorized, map[string]any{"detail": "Authentication credentials were not provided."})
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	return s
}

// URL is the API root, the source's base URL.
func (s *Server) URL() string { return s.srv.URL() + "/api/0" }

// Client is a client that reaches the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Close stops the server: calls are then refused.
func (s *Server) Close() { s.srv.Close() }

// Intercept lets h answer a request in place of the API; h returns false
// to let the API answer. The request is recorded either way.
func (s *Server) Intercept(h func(w http.ResponseWriter, r *http.Request) bool) {
	s.srv.Intercept(h)
}

// Requests are the requests the server saw, in order.
func (s *Server) Requests() []Request { return s.srv.Requests() }

// SeedIssue stores an unresolved issue of project and returns its id.
func (s *Server) SeedIssue(project, title string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprint(4504123456 + len(s.issues))
	s.issues[id] = map[string]any{
		"id": id, "shortId": strings.ToUpper(project) + "-" + fmt.Sprint(len(s.issues)+1), "title": title,
		"culprit": "app/handlers.py in checkout", "status": "unresolved", "level": "error",
		"count": "12", "userCount": 3, "firstSeen": "2025-03-01T09:00:00Z", "lastSeen": "2025-03-02T09:00:00Z",
		"assignedTo": nil, "project": map[string]any{"id": "2", "slug": project, "name": project},
		"permalink": "https://acme.sentry.io/issues/" + id + "/",
	}
	return id
}

// WriteJSON answers status with v as JSON, with Sentry's Content-Type
// (no charset, unlike providertest.WriteJSON).
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request) {
	issues := []any{}
	for _, is := range s.issues {
		if is["project"].(map[string]any)["slug"] == r.PathValue("project") {
			issues = append(issues, is)
		}
	}
	base := "https://sentry.io" + r.URL.Path
	w.Header().Set("Link", `<`+base+`?cursor=0:0:1>; rel="previous"; results="false"; cursor="0:0:1", <`+base+`?cursor=0:100:0>; rel="next"; results="false"; cursor="0:100:0"`)
	WriteJSON(w, http.StatusOK, issues)
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	is, ok := s.issues[r.PathValue("id")]
	if !ok {
		WriteJSON(w, http.StatusNotFound, map[string]any{"detail": "The requested resource does not exist"})
		return
	}
	WriteJSON(w, http.StatusOK, is)
}

func (s *Server) updateIssue(w http.ResponseWriter, r *http.Request) {
	is, ok := s.issues[r.PathValue("id")]
	if !ok {
		WriteJSON(w, http.StatusNotFound, map[string]any{"detail": "The requested resource does not exist"})
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		WriteJSON(w, http.StatusBadRequest, map[string]any{"detail": "Invalid JSON"})
		return
	}
	// Like Sentry, the answer holds the fields that changed.
	changed := map[string]any{}
	if st, ok := body["status"]; ok {
		is["status"], changed["status"], changed["statusDetails"] = st, st, map[string]any{}
	}
	if a, ok := body["assignedTo"]; ok {
		is["assignedTo"], changed["assignedTo"] = a, a
	}
	WriteJSON(w, http.StatusOK, changed)
}
