package httpserver

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxTrackedAddrs bounds the client addresses an AddrLimiter remembers;
// past it, the least recently seen address is forgotten (it starts again
// with a full bucket).
const maxTrackedAddrs = 10000

// AddrLimiter is a token bucket per client address. IPv6 addresses share
// the bucket of their /64, which one client usually holds whole.
type AddrLimiter struct {
	limit        rate.Limit
	burst        int
	forwardedFor bool

	mu    sync.Mutex
	lru   *list.List // of *addrBucket, most recently seen first
	byKey map[netip.Addr]*list.Element
}

type addrBucket struct {
	key     netip.Addr
	limiter *rate.Limiter
}

// NewAddrLimiter returns the limiter cfg describes (its Unauthenticated
// and TrustForwardedFor fields), nil when the cap is off.
func NewAddrLimiter(cfg *Config) *AddrLimiter {
	c := cfg.WithDefaults()
	if c.UnauthenticatedRate <= 0 {
		return nil
	}
	return &AddrLimiter{
		limit: rate.Limit(c.UnauthenticatedRate), burst: c.UnauthenticatedBurst, forwardedFor: c.TrustForwardedFor,
		lru: list.New(), byKey: map[netip.Addr]*list.Element{},
	}
}

// Allow takes a token from the bucket of r's client address. When there
// is none it returns false and how long until there is one. A nil
// AddrLimiter allows everything.
func (l *AddrLimiter) Allow(r *http.Request) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	key := l.clientKey(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	var b *addrBucket
	if e, ok := l.byKey[key]; ok {
		l.lru.MoveToFront(e)
		b = e.Value.(*addrBucket)
	} else {
		if l.lru.Len() >= maxTrackedAddrs {
			oldest := l.lru.Back()
			l.lru.Remove(oldest)
			delete(l.byKey, oldest.Value.(*addrBucket).key)
		}
		b = &addrBucket{key: key, limiter: rate.NewLimiter(l.limit, l.burst)}
		l.byKey[key] = l.lru.PushFront(b)
	}
	now := time.Now()
	if b.limiter.AllowN(now, 1) {
		return true, 0
	}
	wait := b.limiter.ReserveN(now, 1)
	delay := wait.DelayFrom(now)
	wait.CancelAt(now)
	return false, delay
}

// tracked is how many addresses the limiter remembers.
func (l *AddrLimiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}

// clientKey is the address r counts against: the peer's, or with
// forwardedFor the last X-Forwarded-For entry when it parses; an IPv6
// address as its /64.
func (l *AddrLimiter) clientKey(r *http.Request) netip.Addr {
	addr := clientAddr(r, l.forwardedFor)
	if addr.Is6() {
		if p, err := addr.Prefix(64); err == nil {
			addr = p.Addr()
		}
	}
	return addr.WithZone("")
}

// ClientAddr is r's client address as outboxd sees it (the one
// http.trust_forwarded_for describes): the peer's, or with forwardedFor the
// last X-Forwarded-For entry when it parses. It is what the unauthenticated
// cap counts against and what the audit trail records; "" when neither
// parses.
func ClientAddr(r *http.Request, forwardedFor bool) string {
	addr := clientAddr(r, forwardedFor)
	if !addr.IsValid() {
		return ""
	}
	return addr.String()
}

func clientAddr(r *http.Request, forwardedFor bool) netip.Addr {
	var addr netip.Addr
	if forwardedFor {
		if values := r.Header.Values("X-Forwarded-For"); len(values) > 0 {
			entries := strings.Split(values[len(values)-1], ",")
			addr, _ = netip.ParseAddr(strings.TrimSpace(entries[len(entries)-1]))
		}
	}
	if !addr.IsValid() {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		addr, _ = netip.ParseAddr(host)
	}
	// An IPv6 zone (fe80::1%eth0) names an interface of the host that
	// wrote it, not the client, and may be any text.
	return addr.WithZone("").Unmap()
}
