package mcpfront

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	outboxauth "github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Changes rings when an organization's catalog may have changed, in any
// process (feed.Service: its action modes, credentials, connectors or
// databases changed, or notifications may have been missed).
type Changes interface {
	SubscribeCatalog(ctx context.Context, org string) (<-chan struct{}, func())
}

// watchers tell the clients connected to this process that their tool
// list changed (notifications/tools/list_changed): a 2025-11-25 client
// on its session's stream, a 2026-07-28 client on its subscriptions/listen
// request. Each organization with such clients has one goroutine that
// waits for its catalog's doorbell, or for the recheck interval (a
// connector's server may change its tools without any table changing),
// then lists each client's tools again and notifies those whose list
// differs from the one they last saw.
type watchers struct {
	s       *Server
	changes Changes
	recheck time.Duration

	mu    sync.Mutex
	orgs  map[string]*orgWatch
	all   map[*mcp.ServerSession]*watched
	ended bool
}

// orgWatch is an organization's watched clients and its goroutine.
type orgWatch struct {
	members map[*mcp.ServerSession]*watched
	stop    context.CancelFunc
}

// watched is a client to tell. Its fields are guarded by watchers.mu.
type watched struct {
	session *mcp.ServerSession
	claims  *outboxauth.Claims
	// listen is set on a subscriptions/listen request's session (2026-07-28);
	// subscription is that request's id, which each notification carries in
	// its _meta.
	listen       bool
	subscription any
	// wants is set once the client can be told: a 2025-11-25 session's
	// first tools/list, a listen stream's acknowledgement of
	// tools/list_changed.
	wants bool
	// seen is the digest of the tool list the client last saw.
	seen [sha256.Size]byte
}

func newWatchers(s *Server, changes Changes, recheck time.Duration) *watchers {
	return &watchers{s: s, changes: changes, recheck: recheck,
		orgs: map[string]*orgWatch{}, all: map[*mcp.ServerSession]*watched{}}
}

// track starts watching session's catalog for c, and returns a function
// that stops it. A listen stream's client saw the tool list whose digest is
// seen; a 2025-11-25 session's is recorded when it lists (saw).
func (ws *watchers) track(session *mcp.ServerSession, c *outboxauth.Claims, listen bool, seen [sha256.Size]byte) func() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.ended {
		return func() {}
	}
	w := &watched{session: session, claims: c, listen: listen, seen: seen}
	ws.all[session] = w
	org := ws.orgs[c.Org]
	if org == nil {
		ctx, stop := context.WithCancel(context.Background())
		org = &orgWatch{members: map[*mcp.ServerSession]*watched{}, stop: stop}
		ws.orgs[c.Org] = org
		go ws.watch(ctx, c.Org)
	}
	org.members[session] = w
	ws.s.metrics.MCPSessions.Inc()
	return func() { ws.untrack(session, c.Org) }
}

func (ws *watchers) untrack(session *mcp.ServerSession, orgID string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if _, ok := ws.all[session]; !ok {
		return
	}
	delete(ws.all, session)
	ws.s.metrics.MCPSessions.Dec()
	org := ws.orgs[orgID]
	delete(org.members, session)
	if len(org.members) == 0 {
		org.stop()
		delete(ws.orgs, orgID)
	}
}

// saw records the tool list a 2025-11-25 session's client just listed
// with c, the request's claims.
func (ws *watchers) saw(session *mcp.ServerSession, c *outboxauth.Claims, digest [sha256.Size]byte) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.all[session]; w != nil && w.claims.Org == c.Org {
		w.claims, w.seen, w.wants = c, digest, true
	}
}

// acknowledged records that a listen stream agreed to tools/list_changed
// for the listen request whose id is subscription.
func (ws *watchers) acknowledged(session *mcp.ServerSession, subscription any) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w := ws.all[session]; w != nil && w.listen {
		w.subscription, w.wants = subscription, true
	}
}

// close stops every watch and closes the sessions watched (2025-11-25
// sessions and subscriptions/listen requests), whose streams would
// otherwise hold the server's shutdown up.
func (ws *watchers) close() {
	ws.mu.Lock()
	ws.ended = true
	var sessions []*mcp.ServerSession
	for s := range ws.all {
		sessions = append(sessions, s)
	}
	for _, org := range ws.orgs {
		org.stop()
	}
	ws.mu.Unlock()
	for _, s := range sessions {
		_ = s.Close()
	}
}

// watch serves org until ctx is done.
func (ws *watchers) watch(ctx context.Context, org string) {
	bell, hangUp := ws.changes.SubscribeCatalog(ctx, org)
	defer hangUp()
	tick := time.NewTicker(ws.recheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-bell:
		case <-tick.C:
		}
		ws.recheckOrg(dbutil.WithOrg(ctx, org), org)
	}
}

// recheckOrg lists the tools of org's watched clients again, once per
// distinct caller, and tells each client whose list changed.
func (ws *watchers) recheckOrg(ctx context.Context, org string) {
	ws.mu.Lock()
	var members []watched
	if o := ws.orgs[org]; o != nil {
		for _, w := range o.members {
			if w.wants {
				members = append(members, *w)
			}
		}
	}
	ws.mu.Unlock()
	digests := map[string][sha256.Size]byte{}
	for _, w := range members {
		key := callerKey(w.claims)
		digest, ok := digests[key]
		if !ok {
			tools, err := ws.s.listed(ctx, w.claims)
			if err != nil {
				ws.s.logger.WarnContext(ctx, "mcp: re-reading a client's tool list", "organization_id", org, "error", err)
				continue
			}
			digest = digestOf(tools)
			digests[key] = digest
		}
		if digest == w.seen {
			continue
		}
		ws.mu.Lock()
		current := ws.all[w.session]
		if current != nil {
			current.seen = digest
		}
		ws.mu.Unlock()
		if current != nil {
			ws.notify(ctx, &w)
		}
	}
}

// notify sends notifications/tools/list_changed to w's client: on a
// listen stream, with the listen request's id in _meta.
func (ws *watchers) notify(ctx context.Context, w *watched) {
	params := &mcp.ToolListChangedParams{}
	if w.listen {
		params.Meta = mcp.Meta{mcp.MetaKeySubscriptionID: w.subscription}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := ws.s.send(ctx, "notifications/tools/list_changed", &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: w.session, Params: params}); err != nil {
		ws.s.logger.DebugContext(ctx, "mcp: telling a client its tool list changed", "organization_id", w.claims.Org, "error", err)
		return
	}
	ws.s.metrics.MCPListChanged.Inc()
}

// callerKey is what a caller's catalog depends on (catalog.Caller).
func callerKey(c *outboxauth.Claims) string {
	key := []string{c.Org, c.AutomationID, c.UserID}
	if c.Sources.Present() {
		key = append(key, "sources:"+strings.Join(c.Sources.IDs(), ","))
	}
	return strings.Join(key, "\x00")
}

// digestOf is a digest of a tool list as a client sees it.
func digestOf(tools []*mcp.Tool) [sha256.Size]byte {
	b, err := json.Marshal(tools)
	if err != nil {
		// A tool list that does not encode cannot be served either; a zero
		// digest tells the client to list again.
		return [sha256.Size]byte{}
	}
	return sha256.Sum256(b)
}
