package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/api"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// wantAccess is who may call each route, written out independently of the
// route table: a route added without a rule here fails the matrix.
var wantAccess = map[string]string{
	"POST /v1/envelopes/batch":                                               "service",
	"GET /v1/sessions/{session_id}/actions/invocations/{id}/events":          "sandbox member admin owner",
	"GET /v1/invocations/{id}/events":                                        "sandbox member admin owner",
	"GET /v1/invocations/{id}/result-envelope":                               "sandbox member admin owner",
	"GET /v1/sessions/{session_id}/actions/invocations/{id}/result-envelope": "sandbox member admin owner",
	"POST /v1/sessions/{session_id}/actions/invoke":                          "sandbox",
	"GET /v1/sessions/{session_id}/actions/available":                        "sandbox member admin owner",
	"GET /v1/sessions/{session_id}/actions/guide/{integration}":              "sandbox member admin owner",
	"GET /v1/sessions/{session_id}/actions/invocations":                      "sandbox member admin owner",
	"GET /v1/sessions/{session_id}/actions/invocations/{id}":                 "sandbox member admin owner",
	"POST /v1/sessions/{session_id}/actions/invocations/{id}/cancel":         "sandbox",
	"POST /v1/sessions/{session_id}/actions/invocations/{id}/approve":        "admin owner",
	"POST /v1/sessions/{session_id}/actions/invocations/{id}/deny":           "admin owner",
	"GET /v1/actions/available":                                              "member admin owner",
	"GET /v1/actions/bootstrap-guide":                                        "sandbox service member admin owner",
	"GET /v1/sessions/{session_id}/events":                                   "sandbox member admin owner",
	"GET /v1/events":                                                         "member admin owner",
	"GET /v1/invocations":                                                    "member admin owner",
	"GET /v1/invocations/{id}":                                               "sandbox member admin owner",
	"POST /v1/invocations/{id}/approve":                                      "admin owner",
	"POST /v1/invocations/{id}/deny":                                         "admin owner",
	"GET /v1/action-modes":                                                   "member admin owner",
	"PUT /v1/action-modes":                                                   "admin owner",
	"GET /v1/automations/{automation_id}/action-modes":                       "member admin owner",
	"PUT /v1/automations/{automation_id}/action-modes":                       "admin owner",
	"GET /v1/credentials":                                                    "admin owner",
	"PUT /v1/credentials/{integration}":                                      "admin owner",
	"DELETE /v1/credentials/{integration}":                                   "admin owner",
	"GET /v1/connectors":                                                     "admin owner",
	"POST /v1/connectors":                                                    "admin owner",
	"GET /v1/connectors/{id}":                                                "admin owner",
	"PATCH /v1/connectors/{id}":                                              "admin owner",
	"DELETE /v1/connectors/{id}":                                             "admin owner",
	"POST /v1/connectors/{id}/validate":                                      "admin owner",
	"GET /v1/connectors/{id}/tools":                                          "admin owner",
	"PUT /v1/connectors/{id}/tools":                                          "admin owner",
	"GET /v1/databases":                                                      "admin owner",
	"POST /v1/databases":                                                     "admin owner",
	"GET /v1/databases/{id}":                                                 "admin owner",
	"PATCH /v1/databases/{id}":                                               "admin owner",
	"DELETE /v1/databases/{id}":                                              "admin owner",
	"POST /v1/databases/{id}/test":                                           "admin owner",
	"GET /v1/webhooks":                                                       "admin owner",
	"POST /v1/webhooks":                                                      "admin owner",
	"GET /v1/webhooks/{id}":                                                  "admin owner",
	"PATCH /v1/webhooks/{id}":                                                "admin owner",
	"DELETE /v1/webhooks/{id}":                                               "admin owner",
	"POST /v1/webhooks/{id}/rotate-secret":                                   "admin owner",
	"GET /v1/webhooks/{id}/deliveries":                                       "admin owner",
	"GET /v1/notifications/slack":                                            "admin owner",
	"PUT /v1/notifications/slack":                                            "admin owner",
	"GET /v1/approvers/slack":                                                "admin owner",
	"PUT /v1/approvers/slack":                                                "owner",
	"GET /v1/approvers/policy":                                               "admin owner",
	"PUT /v1/approvers/policy":                                               "owner",
	"GET /v1/quiet-hours":                                                    "admin owner",
	"PUT /v1/quiet-hours":                                                    "admin owner",
	"GET /v1/do-not-contact":                                                 "admin owner",
	"PUT /v1/do-not-contact":                                                 "admin owner",
	"GET /v1/dead-letters":                                                   "admin owner",
	"POST /v1/dead-letters/retry":                                            "admin owner",
	"POST /v1/dead-letters/discard":                                          "admin owner",
	"POST /v1/dead-letters/{id}/retry":                                       "admin owner",
	"POST /v1/dead-letters/{id}/discard":                                     "admin owner",
	"GET /v1/queues":                                                         "admin owner",
	"POST /v1/queues/pause":                                                  "admin owner",
	"POST /v1/queues/resume":                                                 "admin owner",
	"GET /v1/stats":                                                          "admin owner",
	"GET /v1/audit":                                                          "admin owner",
	"GET /v1/audit/export":                                                   "admin owner",
	"GET /v1/rate-buckets":                                                   "admin owner",
	"POST /v1/envelopes":                                                     "service",
	"GET /v1/revocations":                                                    "owner",
	"POST /v1/revocations":                                                   "owner",
	"GET /v1/envelopes/{id}":                                                 "service member admin owner",
	"DELETE /v1/envelopes/{id}":                                              "service admin owner",
	"GET /v1/grants":                                                         "admin owner",
	"DELETE /v1/grants/{id}":                                                 "admin owner",
}

// TestAuth_Matrix calls every route with every kind of token (each token
// kind and role, a sandbox of another session, a service token with and
// without an automation claim) of two organizations. A caller the route
// does not admit gets 403; an admitted caller never does, never gets a 5xx,
// and never reaches an object of the other organization.
func TestAuth_Matrix(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-matrix")
	// An object of org-1 for every {id}: a pending envelope.
	env := postEnvelope(t, b, envelope("matrix", map[string]any{"approval": "required"}), http.StatusCreated)
	id := env["action_id"].(string)

	routes := api.New(&api.Deps{}).Routes()
	got := map[string]string{}
	for _, rt := range routes {
		got[rt.Method+" "+rt.Pattern] = strings.Join(rt.Who, " ")
	}
	require.Equal(t, wantAccess, got, "every route needs its rule in wantAccess")

	type caller struct {
		name, principal string
		claims          auth.Claims
	}
	var callers []caller
	for _, org := range []string{apptest.Org, "org-2"} {
		callers = append(callers,
			caller{org + "/owner", "owner", auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleOwner}},
			caller{org + "/admin", "admin", auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleAdmin}},
			caller{org + "/member", "member", auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleMember}},
			caller{org + "/sandbox", "sandbox", auth.Claims{Org: org, Kind: auth.KindSandbox, SessionID: apptest.Session}},
			caller{org + "/sandbox-other-session", "sandbox", auth.Claims{Org: org, Kind: auth.KindSandbox, SessionID: "session-other"}},
			caller{org + "/service", "service", auth.Claims{Org: org, Kind: auth.KindService, AutomationID: "automation-1"}},
			caller{org + "/service-no-automation", "service", auth.Claims{Org: org, Kind: auth.KindService}},
		)
	}

	// Reads name org-1's envelope; changes name an id nobody has, so an
	// admitted caller's request cannot change anything.
	fill := func(pattern, id string) string {
		return strings.NewReplacer("{session_id}", apptest.Session, "{id}", id, "{integration}", "slack",
			"{automation_id}", "automation-1").Replace(pattern)
	}
	var requests int
	for _, rt := range routes {
		path := fill(rt.Pattern, id)
		if rt.Method != "GET" {
			path = fill(rt.Pattern, "0193a6c0-0000-7000-8000-000000000000")
		}
		for _, c := range callers {
			requests++
			r := call(b, rt, path, b.Token(c.claims))
			what := fmt.Sprintf("%s %s as %s: %s", rt.Method, path, c.name, r.Raw)
			admitted := slices.Contains(rt.Who, c.principal)
			if c.name[strings.Index(c.name, "/")+1:] == "sandbox-other-session" && strings.Contains(rt.Pattern, "{session_id}") {
				admitted = false
			}
			if !admitted {
				requireAPIError(t, r, http.StatusForbidden, "forbidden")
				continue
			}
			require.NotEqual(t, http.StatusForbidden, r.Status, what)
			require.NotEqual(t, http.StatusUnauthorized, r.Status, what)
			require.Less(t, r.Status, 500, what)
			if c.claims.Org != apptest.Org && strings.Contains(rt.Pattern, "{id}") && rt.Method == "GET" {
				require.Equal(t, http.StatusNotFound, r.Status, what)
			}
		}
	}
	require.Equal(t, len(routes)*14, requests)

	// Nothing the matrix sent changed the envelope, and every pause it
	// sent was resumed by the route after it.
	require.Equal(t, "pending", b.Invocation(id)["status"])
	var paused int
	require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT count(*) FROM org_pauses").Scan(&paused))
	require.Zero(t, paused)
}

// call calls a route; an event stream is read up to its first message and
// closed.
func call(b *apptest.Bundle, rt api.Route, path, token string) *apptest.Response {
	if !rt.Stream {
		return b.Do(rt.Method, path, token, nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := b.Open(ctx, path, token)
	defer resp.Body.Close()
	r := &apptest.Response{Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		r.Raw, _ = io.ReadAll(resp.Body)
		_ = json.Unmarshal(r.Raw, &r.Body)
		return r
	}
	buf := make([]byte, 64)
	n, _ := resp.Body.Read(buf)
	r.Raw = buf[:n]
	return r
}
