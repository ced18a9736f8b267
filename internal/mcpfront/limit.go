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
//
// A request is in flight from when its POST reaches the front door (enter)
// until it is answered, so a session closed for room has none, and every
// request that arrives while it closes is answered 404 at the door: the
// SDK, given one, would open a stream the closing session never answers.
type sessionLimit struct {
	max int
	// closedLog and refusedLog keep a flood of sessions out of the log.
	closedLog, refusedLog rate.Sometimes

	mu sync.Mutex
	// orgs holds each organization's sessions, most recently used first.
	orgs map[string]*list.List
	all  map[*mcp.ServerSession]*list.Element
	byID map[string]*list.Element
	// closing are the ids of the sessions closed for room, until close
	// has closed them.
	closing map[string]bool
	// inFlight counts the requests in flight of every session; answered
	// is signalled each time one is answered (settle).
	inFlight int
	answered *sync.Cond
}

// limited is one session of an organization.
type limited struct {
	session  *mcp.ServerSession
	id, org  string
	inFlight int
}

func newSessionLimit(max int) *sessionLimit {
	l := &sessionLimit{max: max, orgs: map[string]*list.List{}, all: map[*mcp.ServerSession]*list.Element{},
		byID: map[string]*list.Element{}, closing: map[string]bool{},
		closedLog: rate.Sometimes{First: 1, Interval: time.Minute}, refusedLog: rate.Sometimes{First: 1, Interval: time.Minute}}
	l.answered = sync.NewCond(&l.mu)
	return l
}

// settle waits until no session has a request in flight, or until d has
// passed.
func (l *sessionLimit) settle(d time.Duration) {
	deadline := time.Now().Add(d)
	wake := time.AfterFunc(d, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.answered.Broadcast()
	})
	defer wake.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.inFlight > 0 && time.Now().Before(deadline) {
		l.answered.Wait()
	}
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
// to close to make room for it, if any, which is closing from then on;
// added is false when ss was admitted before. Two sessions admitted at
// once past room's check may leave org over the limit by the one whose
// requests are all in flight, until its next admission.
func (l *sessionLimit) admit(org string, ss *mcp.ServerSession) (evict *mcp.ServerSession, added bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.all[ss]; ok {
		return nil, false // initialized again
	}
	if sessions := l.orgs[org]; sessions != nil && sessions.Len() >= l.max {
		if e := idlest(sessions); e != nil {
			evict = e.Value.(*limited).session
			l.closing[evict.ID()] = true
			l.forget(e) // which drops the list it empties
		}
	}
	sessions := l.orgs[org]
	if sessions == nil {
		sessions = list.New()
		l.orgs[org] = sessions
	}
	e := sessions.PushFront(&limited{session: ss, id: ss.ID(), org: org})
	l.all[ss], l.byID[ss.ID()] = e, e
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

// enter notes that a request of org for session id arrived, and returns
// what notes its end; gone is true, and end nil, when the session is
// closing. A session not admitted (one being initialized, or unknown: the
// SDK answers it) or another organization's (the SDK refuses the request)
// is not counted.
func (l *sessionLimit) enter(org, id string) (end func(), gone bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing[id] {
		return nil, true
	}
	e, ok := l.byID[id]
	if !ok || e.Value.(*limited).org != org {
		return func() {}, false
	}
	s := e.Value.(*limited)
	s.inFlight++
	l.inFlight++
	l.orgs[s.org].MoveToFront(e)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		s.inFlight--
		l.inFlight--
		l.answered.Broadcast()
	}, false
}

// remove forgets ss, which closed.
func (l *sessionLimit) remove(ss *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.all[ss]; ok {
		l.forget(e)
	}
}

// close closes ss, which admit chose to close, and then forgets it was
// closing: once Close returns the SDK no longer knows the session and
// answers 404 itself (the session's Wait may return before that).
func (l *sessionLimit) close(ss *mcp.ServerSession) {
	_ = ss.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.closing, ss.ID())
}

func (l *sessionLimit) forget(e *list.Element) {
	s := e.Value.(*limited)
	delete(l.all, s.session)
	delete(l.byID, s.id)
	sessions := l.orgs[s.org]
	sessions.Remove(e)
	if sessions.Len() == 0 {
		delete(l.orgs, s.org)
	}
}
