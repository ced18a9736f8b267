// Package keyed bounds how many holders each key (an organization) has at
// once: the share of a process's workers, webhook deliveries, database
// connections or feed reads one organization may take, so that one whose
// work hangs or waits leaves the rest to the others.
package keyed

import (
	"context"
	"sync"
	"time"
)

// Limiter gives each key at most max slots at once. A key with no slot
// held and no one waiting is forgotten.
type Limiter struct {
	max  int
	mu   sync.Mutex
	keys map[string]*slots
}

// slots is one key's: a token in ch for each slot held, users counting
// the holders and those waiting for one.
type slots struct {
	ch    chan struct{}
	users int
}

// New returns a Limiter of n slots per key (at least 1).
func New(n int) *Limiter {
	return &Limiter{max: max(1, n), keys: map[string]*slots{}}
}

// Wait takes one of key's slots, waiting for one as long as ctx lasts,
// and returns what gives it back; or ctx's error.
func (l *Limiter) Wait(ctx context.Context, key string) (release func(), err error) {
	s := l.enter(key)
	select {
	case s.ch <- struct{}{}:
		return l.releaser(key, s), nil
	case <-ctx.Done():
		l.leave(key, s)
		return nil, ctx.Err()
	}
}

// Try takes one of key's slots, waiting up to wait for one (none: not at
// all); ok is false when none came free in that time or ctx ended.
func (l *Limiter) Try(ctx context.Context, key string, wait time.Duration) (release func(), ok bool) {
	s := l.enter(key)
	select {
	case s.ch <- struct{}{}:
		return l.releaser(key, s), true
	default:
	}
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case s.ch <- struct{}{}:
			return l.releaser(key, s), true
		case <-timer.C:
		case <-ctx.Done():
		}
	}
	l.leave(key, s)
	return nil, false
}

func (l *Limiter) enter(key string) *slots {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.keys[key]
	if s == nil {
		s = &slots{ch: make(chan struct{}, l.max)}
		l.keys[key] = s
	}
	s.users++
	return s
}

func (l *Limiter) leave(key string, s *slots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.users--; s.users == 0 {
		delete(l.keys, key)
	}
}

// releaser gives a slot back once, however often it is called.
func (l *Limiter) releaser(key string, s *slots) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			<-s.ch
			l.leave(key, s)
		})
	}
}

// Len returns how many keys have a slot held or are waiting for one.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}
