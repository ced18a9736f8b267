package mcpfront

import (
	"container/list"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// sessionLimit keeps at most max open sessions per organization in this
// process. A 2025-11-25 session outlives its requests (until
// Config.SessionTimeout), so without a limit one token could open sessions
// until the process runs out of memory. A new session past the limit
// closes the organization's session idle longest (none of its requests in
// flight): its client's next request gets 404, and it starts a new
// session, as the transport says. While every session has a request in
// flight, a new one is refused. One organization's sessions never close
// another's.
type sessionLimit struct {
	max int
	// closedLog and refusedLog keep a flood of sessions out of the log.
	closedLog, refusedLog rate.Sometimes

	mu sync.Mutex
	// orgs holds each organization's sessions, most recently used first.
	orgs map[string]*list.List
	all  map[*mcp.ServerSession]*list.Element
}

// limited is one session of an organization.
type limited struct {
	session  *mcp.ServerSession
	org      string
	inFlight int
}

func newSessionLimit(max int) *sessionLimit {
	return &sessionLimit{max: max, orgs: map[string]*list.List{}, all: map[*mcp.ServerSession]*list.Element{},
		closedLog: rate.Sometimes{First: 1, Interval: time.Minute}, refusedLog: rate.Sometimes{First: 1, Interval: time.Minute}}
}

// room reports whether org may open one more session: it is under the
// limit, or one of its sessions is idle and may be closed for it.
func (l *sessionLimit) room(org string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	sessions := l.orgs[org]
	return sessions == nil || sessions.Len() < l.max || idlest(sessions) != nil
}

// admit adds ss, an initialized session of org, and returns the session
// to close to make room for it, if any; added is false when ss was
// admitted before. Two sessions admitted at once
// past room's check may leave org over the limit by the one whose
// requests are all in flight, until its next admission.
func (l *sessionLimit) admit(org string, ss *mcp.ServerSession) (evict *mcp.ServerSession, added bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.all[ss]; ok {
		return nil, false // initialized again
	}
	sessions := l.orgs[org]
	if sessions == nil {
		sessions = list.New()
		l.orgs[org] = sessions
	}
	if sessions.Len() >= l.max {
		if e := idlest(sessions); e != nil {
			evict = e.Value.(*limited).session
			l.forget(e)
		}
	}
	l.all[ss] = sessions.PushFront(&limited{session: ss, org: org})
	return evict, true
}

// idlest is the least recently used session of sessions with no request
// in flight, or nil.
func idlest(sessions *list.List) *list.Element {
	for e := sessions.Back(); e != nil; e = e.Prev() {
		if e.Value.(*limited).inFlight == 0 {
			return e
		}
	}
	return nil
}

// begin notes that a request of ss started, and returns what notes its
// end. A session not admitted (a 2026-07-28 request's, or one being
// initialized) is not counted.
func (l *sessionLimit) begin(ss *mcp.ServerSession) (end func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.all[ss]
	if !ok {
		return func() {}
	}
	s := e.Value.(*limited)
	s.inFlight++
	l.orgs[s.org].MoveToFront(e)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		s.inFlight--
	}
}

// remove forgets ss, which closed.
func (l *sessionLimit) remove(ss *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.all[ss]; ok {
		l.forget(e)
	}
}

func (l *sessionLimit) forget(e *list.Element) {
	s := e.Value.(*limited)
	delete(l.all, s.session)
	sessions := l.orgs[s.org]
	sessions.Remove(e)
	if sessions.Len() == 0 {
		delete(l.orgs, s.org)
	}
}
