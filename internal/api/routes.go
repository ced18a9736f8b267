package api

import (
	"cmp"
	"net/http"
	"strings"

	"github.com/outboxd/outboxd/internal/domain/auth"
)

// principal is one kind of caller, as far as authorisation goes: a token
// kind, and for users their role.
type principal uint8

const (
	sandbox principal = 1 << iota // an agent's sandbox; on session routes only its own session
	service                       // an automation
	member                        // a user with role member
	admin                         // a user with role admin
	owner                         // a user with role owner

	admins  = admin | owner
	users   = member | admins
	anybody = sandbox | service | users
)

var principalNames = []struct {
	p    principal
	name string
}{{sandbox, "sandbox"}, {service, "service"}, {member, "member"}, {admin, "admin"}, {owner, "owner"}}

func principalOf(c *auth.Claims) principal {
	switch c.Kind {
	case auth.KindSandbox:
		return sandbox
	case auth.KindService:
		return service
	case auth.KindUser:
		switch c.Role {
		case auth.RoleOwner:
			return owner
		case auth.RoleAdmin:
			return admin
		case auth.RoleMember:
			return member
		}
	}
	return 0
}

// names lists the principals in p, for errors and the route listing.
func (p principal) names() []string {
	var out []string
	for _, n := range principalNames {
		if p&n.p != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// route is one authenticated API route and who may call it. Handlers do
// not check the caller's kind or role again; they only narrow what a
// caller sees (a sandbox its session, a service token its automation's
// envelopes).
type route struct {
	method, pattern string
	who             principal
	handler         handlerFunc
}

// routes is every authenticated route of the API: the one place that says
// who may call what. Least privilege:
//   - members read the inbox, envelopes, the catalog and action modes, and
//     decide nothing; connectors, databases, credentials, gates, dead letters and
//     the organization's queue (its counts, its pause) are for admins and
//     owners; River's queues, shared by every organization, are not served
//     at all: they are the operator's (`outboxd queue`);
//   - a service token enqueues envelopes and reads or cancels the envelopes
//     of its own automation, and nothing else;
//   - a sandbox token acts on its own session only.
func (s *Server) routes() []route {
	const session = "/v1/sessions/{session_id}/actions"
	return []route{
		{"POST", session + "/invoke", sandbox, s.invoke},
		{"GET", session + "/available", sandbox | users, s.available},
		{"GET", session + "/guide/{integration}", sandbox | users, s.guide},
		{"GET", session + "/invocations", sandbox | users, s.listSession},
		{"GET", session + "/invocations/{id}", sandbox | users, s.getInSession},
		{"GET", session + "/invocations/{id}/events", sandbox | users, s.events},
		{"GET", session + "/invocations/{id}/result-envelope", sandbox | users, s.resultEnvelope},
		{"POST", session + "/invocations/{id}/cancel", sandbox, s.cancelInSession},
		{"POST", session + "/invocations/{id}/approve", admins, s.approve},
		{"POST", session + "/invocations/{id}/deny", admins, s.deny},
		{"GET", "/v1/actions/bootstrap-guide", anybody, s.bootstrapGuide},
		{"GET", "/v1/actions/available", users, s.available},
		{"GET", "/v1/sessions/{session_id}/events", sandbox | users, s.stream},
		{"GET", "/v1/events", users, s.stream},

		{"GET", "/v1/invocations", users, s.listOrg},
		{"GET", "/v1/invocations/{id}", sandbox | users, s.getInvocation},
		{"GET", "/v1/invocations/{id}/events", sandbox | users, s.events},
		{"GET", "/v1/invocations/{id}/result-envelope", sandbox | users, s.resultEnvelope},
		{"POST", "/v1/invocations/{id}/approve", admins, s.approve},
		{"POST", "/v1/invocations/{id}/deny", admins, s.deny},

		{"GET", "/v1/grants", admins, s.listGrants},
		{"DELETE", "/v1/grants/{id}", admins, s.revokeGrant},

		{"GET", "/v1/action-modes", users, s.getModes},
		{"PUT", "/v1/action-modes", admins, s.putModes},
		{"GET", "/v1/automations/{automation_id}/action-modes", users, s.getModes},
		{"PUT", "/v1/automations/{automation_id}/action-modes", admins, s.putModes},

		{"GET", "/v1/credentials", admins, s.listCredentials},
		{"PUT", "/v1/credentials/{integration}", admins, s.putCredential},
		{"DELETE", "/v1/credentials/{integration}", admins, s.deleteCredential},

		{"GET", "/v1/connectors", admins, s.listConnectors},
		{"POST", "/v1/connectors", admins, s.createConnector},
		{"GET", "/v1/connectors/{id}", admins, s.getConnector},
		{"PATCH", "/v1/connectors/{id}", admins, s.updateConnector},
		{"DELETE", "/v1/connectors/{id}", admins, s.deleteConnector},
		{"POST", "/v1/connectors/{id}/validate", admins, s.validateConnector},
		{"GET", "/v1/connectors/{id}/tools", admins, s.connectorTools},
		{"PUT", "/v1/connectors/{id}/tools", admins, s.reviewConnectorTools},

		{"GET", "/v1/databases", admins, s.listDatabases},
		{"POST", "/v1/databases", admins, s.createDatabase},
		{"GET", "/v1/databases/{id}", admins, s.getDatabase},
		{"PATCH", "/v1/databases/{id}", admins, s.updateDatabase},
		{"DELETE", "/v1/databases/{id}", admins, s.deleteDatabase},
		{"POST", "/v1/databases/{id}/test", admins, s.testDatabase},

		{"GET", "/v1/webhooks", admins, s.listWebhooks},
		{"POST", "/v1/webhooks", admins, s.createWebhook},
		{"GET", "/v1/webhooks/{id}", admins, s.getWebhook},
		{"PATCH", "/v1/webhooks/{id}", admins, s.updateWebhook},
		{"DELETE", "/v1/webhooks/{id}", admins, s.deleteWebhook},
		{"POST", "/v1/webhooks/{id}/rotate-secret", admins, s.rotateWebhookSecret},
		{"GET", "/v1/webhooks/{id}/deliveries", admins, s.listDeliveries},

		{"GET", "/v1/notifications/slack", admins, s.getSlackSettings},
		{"PUT", "/v1/notifications/slack", admins, s.putSlackChannel},
		{"GET", "/v1/approvers/slack", admins, s.getSlackSettings},
		{"PUT", "/v1/approvers/slack", owner, s.putSlackApprovers},
		{"GET", "/v1/approvers/policy", admins, s.getApprovalPolicy},
		{"PUT", "/v1/approvers/policy", owner, s.putApprovalPolicy},

		{"GET", "/v1/quiet-hours", admins, s.getQuietHours},
		{"PUT", "/v1/quiet-hours", admins, s.putQuietHours},
		{"GET", "/v1/do-not-contact", admins, s.getDoNotContact},
		{"PUT", "/v1/do-not-contact", admins, s.putDoNotContact},
		{"GET", "/v1/dead-letters", admins, s.listDeadLetters},
		{"POST", "/v1/dead-letters/retry", admins, s.deadLetterOp(true)},
		{"POST", "/v1/dead-letters/discard", admins, s.deadLetterOp(false)},
		{"POST", "/v1/dead-letters/{id}/retry", admins, s.deadLetterOp(true)},
		{"POST", "/v1/dead-letters/{id}/discard", admins, s.deadLetterOp(false)},
		{"GET", "/v1/queues", admins, s.queue},
		{"POST", "/v1/queues/pause", admins, s.pause(false)},
		{"POST", "/v1/queues/resume", admins, s.pause(true)},
		{"GET", "/v1/stats", admins, s.stats},
		{"GET", "/v1/audit", admins, s.listAudit},
		{"GET", "/v1/audit/export", admins, s.exportAudit},
		{"GET", "/v1/rate-buckets", admins, s.rateBuckets},

		{"GET", "/v1/revocations", owner, s.listRevocations},
		{"POST", "/v1/revocations", owner, s.revoke},

		{"POST", "/v1/envelopes", service, s.enqueue},
		{"POST", "/v1/envelopes/batch", service, s.enqueueBatch},
		{"GET", "/v1/envelopes/{id}", service | users, s.getEnvelope},
		{"DELETE", "/v1/envelopes/{id}", service | admins, s.cancelEnvelope},
	}
}

// bodyLimits are the routes whose bodies may exceed maxBodyBytes.
var bodyLimits = map[string]int64{
	"POST /v1/envelopes/batch": 16 << 20,
}

func (rt *route) bodyLimit() int64 {
	return cmp.Or(bodyLimits[rt.method+" "+rt.pattern], maxBodyBytes)
}

// Route describes one authenticated route: its method, its pattern and the
// callers it admits (sandbox, service, member, admin, owner).
type Route struct {
	Method, Pattern string
	Who             []string
	// Stream is set on routes that answer with an event stream.
	Stream bool
}

// Routes lists the API's authenticated routes, for documentation and for
// tests that enumerate them.
func (s *Server) Routes() []Route {
	var out []Route
	for _, rt := range s.routes() {
		out = append(out, Route{Method: rt.method, Pattern: rt.pattern, Who: rt.who.names(), Stream: streamRoutes[rt.method+" "+rt.pattern]})
	}
	return out
}

// PublicRoutes lists the routes served without a bearer token (health,
// readiness, metrics, the OpenAPI document, Slack's signed callbacks).
func (s *Server) PublicRoutes() []Route {
	var out []Route
	for _, rt := range s.publicRoutes() {
		out = append(out, Route{Method: rt.method, Pattern: rt.pattern})
	}
	return out
}

// authorize checks the route's rule for the caller: its principal, and for
// a sandbox on a session route, that the session is its own.
func (rt *route) authorize(r *http.Request, c *auth.Claims) error {
	if rt.who&principalOf(c) == 0 {
		return forbidden(rt.method + " " + rt.pattern + " takes a token of: " + strings.Join(rt.who.names(), ", "))
	}
	if c.Kind == auth.KindSandbox && strings.Contains(rt.pattern, "{session_id}") && r.PathValue("session_id") != c.SessionID {
		return forbidden("this sandbox token is bound to another session")
	}
	return nil
}
