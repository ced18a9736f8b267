package httpserver

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener holds at most max connections. At the cap a new
// connection takes the place of the oldest one that is evictable (idle
// between requests, or not yet past its request header); with none, Accept
// waits until a connection ends, and new connections wait in the kernel's
// accept queue meanwhile (one of them, accepted just as the last
// evictable connection became busy, waits in Accept).
type limitListener struct {
	net.Listener
	max     int
	onEvict func()

	mu     sync.Mutex
	freed  *sync.Cond // signalled when a connection ends or becomes evictable
	conns  map[*limitConn]struct{}
	closed bool
}

func newLimitListener(ln net.Listener, maxConns int, onEvict func()) *limitListener {
	l := &limitListener{Listener: ln, max: maxConns, onEvict: onEvict, conns: map[*limitConn]struct{}{}}
	l.freed = sync.NewCond(&l.mu)
	return l
}

// limitConn is a connection the listener counts; its fields are guarded by
// the listener's mutex.
type limitConn struct {
	net.Conn
	l         *limitListener
	since     time.Time // when it became evictable
	evictable bool
	once      sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.freed.Broadcast()
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// Accept waits while every slot is taken by a connection that is serving a
// request, then accepts, evicting the oldest evictable connection when at
// the cap.
func (l *limitListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	for !l.closed && len(l.conns) >= l.max && l.oldestEvictableLocked() == nil {
		l.freed.Wait()
	}
	l.mu.Unlock()

	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	var victim *limitConn
	for !l.closed && len(l.conns) >= l.max {
		// The evictable connection seen above may have become busy
		// meanwhile: then c waits (the one connection over the cap)
		// until a slot frees.
		if victim = l.oldestEvictableLocked(); victim != nil {
			delete(l.conns, victim)
			break
		}
		l.freed.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return nil, net.ErrClosed
	}
	lc := &limitConn{Conn: c, l: l, since: time.Now(), evictable: true}
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	if victim != nil {
		victim.Close()
		if l.onEvict != nil {
			l.onEvict()
		}
	}
	return lc, nil
}

func (l *limitListener) oldestEvictableLocked() *limitConn {
	var oldest *limitConn
	for c := range l.conns {
		if c.evictable && (oldest == nil || c.since.Before(oldest.since)) {
			oldest = c
		}
	}
	return oldest
}

func (l *limitListener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.freed.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// open is how many connections the listener holds.
func (l *limitListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// connState is the server's ConnState hook: a connection is evictable
// while it is new (no whole request header yet) or idle.
func (l *limitListener) connState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, held := l.conns[c]; !held {
		return
	}
	switch state {
	case http.StateNew, http.StateIdle:
		if !c.evictable {
			c.evictable, c.since = true, time.Now()
			l.freed.Broadcast()
		}
	case http.StateActive, http.StateHijacked:
		c.evictable = false
	}
}
