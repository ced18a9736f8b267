package api

import (
	"bufio"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
)

// wellKnownResource is where the MCP front door's protected resource
// metadata is served (RFC 9728): at the address RFC 9728 derives from the
// resource, <base>/mcp, and at the root, where clients of the MCP
// authorization spec look when there is no path.
const (
	wellKnownResource    = "/.well-known/oauth-protected-resource"
	wellKnownMCPResource = wellKnownResource + "/mcp"
)

// serveMCP is /mcp, the MCP front door: the bearer token is checked here
// as on every API route. A refusal names the resource metadata in
// WWW-Authenticate, as the MCP authorization spec asks. A sandbox token's
// calls are invokes of its session, a service token's envelopes of its
// automation; a user token is refused (people approve, agents call).
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	claims, err := s.bearerClaims(r)
	if err != nil {
		challenge := fmt.Sprintf("Bearer resource_metadata=%q", s.origin(r)+wellKnownMCPResource)
		if r.Header.Get("Authorization") != "" {
			challenge += `, error="invalid_token"` // RFC 6750: a token was sent and refused
		}
		w.Header().Set("WWW-Authenticate", challenge)
		closeUnread(w, r)
		s.writeErr(w, r, err)
		return
	}
	if claims.Kind != auth.KindSandbox && claims.Kind != auth.KindService {
		closeUnread(w, r)
		s.writeErr(w, r, forbidden("/mcp takes a sandbox token (an agent's session) or a service token (an automation), not a "+string(claims.Kind)+" token"))
		return
	}
	release, ok := s.admitOrg(w, r, claims.Org)
	if !ok {
		return
	}
	defer release()
	if r.Method == http.MethodPost && isBatch(r) {
		closeUnread(w, r)
		writeJSON(w, http.StatusBadRequest, map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": -32600, "message": "JSON-RPC batches are not served: send one message per request"}})
		return
	}
	ctx := dbutil.WithOrg(r.Context(), claims.Org)
	if r.Method == http.MethodGet {
		// A session's stream ends once its token is revoked or expires,
		// as an event stream does; every later request with the token is
		// refused.
		var stop func()
		ctx, stop = s.untilTokenEnds(ctx, claims)
		defer stop()
	}
	// A call that needs approval waits for the decision, and a session's
	// stream or a subscriptions/listen request stays open: each write has
	// the write timeout from its start.
	s.mcp.ServeMCP(httpserver.WriteOverTime(w, r), r.WithContext(ctx), claims, s.origin(r))
}

// protectedResource is the MCP front door's protected resource metadata
// (RFC 9728): the resource and that bearer tokens go in the header.
// outboxd's tokens are minted by the platform that runs the agents, so no
// authorization server is named.
func (s *Server) protectedResource(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, &oauthex.ProtectedResourceMetadata{
		Resource:               s.origin(r) + "/mcp",
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "outboxd",
	})
}

// origin is the scheme and host the client reached: behind a proxy
// trusted with http.trust_forwarded_for, the ones the proxy was sent to.
func (s *Server) origin(r *http.Request) string {
	return httpserver.Origin(r, s.trustForwardedFor)
}

// isBatch reports whether r's body is a JSON array, a JSON-RPC batch
// (which MCP no longer has), leaving the body to be read again.
func isBatch(r *http.Request) bool {
	br := bufio.NewReader(r.Body)
	r.Body = struct {
		io.Reader
		io.Closer
	}{br, r.Body}
	for {
		b, err := br.Peek(1)
		if err != nil {
			return false
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = br.ReadByte()
			continue
		}
		return b[0] == '['
	}
}
