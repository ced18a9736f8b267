package database

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// errClosed is returned for a call after Close.
var errClosed = errors.New("database pools are closed")

// pools is the cache of one pool per database: opened on first use,
// closed after idle without calls, when the database's URL changes (the
// next call opens a pool for the new URL), when the database is dropped
// and on close. A pool in use by a call is closed only when the last call
// using it returns.
type pools struct {
	cfg *Config

	mu     sync.Mutex
	byID   map[uuid.UUID]*poolEntry
	closed bool
	// open counts the pools not yet closed, for tests.
	open int
}

type poolEntry struct {
	// key is the SHA-256 of the URL the pool was opened with, so a changed
	// URL is noticed without keeping the URL.
	key  [sha256.Size]byte
	pool *pgxpool.Pool
	// inUse counts the calls holding the pool; idle closes it when the
	// count has stayed at zero for the idle timeout.
	inUse int
	// uses counts the calls ever made, so an idle timer that fired while
	// a call came and went closes nothing.
	uses    int
	idle    *time.Timer
	retired bool // out of the cache: closed when inUse drops to zero
}

func newPools(cfg *Config) *pools {
	return &pools{cfg: cfg, byID: map[uuid.UUID]*poolEntry{}}
}

// acquire returns the pool of database id for rawURL, opening it when
// there is none or the URL changed, and a release the caller must call
// when its call is over.
func (p *pools) acquire(id uuid.UUID, rawURL string) (*pgxpool.Pool, func(), error) {
	key := sha256.Sum256([]byte(rawURL))
	var stale *pgxpool.Pool
	defer func() { closePool(stale) }() // after the lock is let go
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil, errClosed
	}
	e := p.byID[id]
	if e != nil && e.key != key {
		stale = p.retireLocked(id, e)
		e = nil
	}
	if e == nil {
		cfg, err := poolConfig(rawURL, p.cfg)
		if err != nil {
			return nil, nil, err
		}
		// The pool connects on first acquire, not here: nothing blocks
		// while the lock is held.
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			return nil, nil, err
		}
		e = &poolEntry{key: key, pool: pool}
		p.byID[id] = e
		p.open++
	}
	e.inUse++
	e.uses++
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
	var once sync.Once
	return e.pool, func() { once.Do(func() { p.release(id, e) }) }, nil
}

// release ends one call's use of e.
func (p *pools) release(id uuid.UUID, e *poolEntry) {
	p.mu.Lock()
	e.inUse--
	var done *pgxpool.Pool
	switch {
	case e.inUse > 0:
	case e.retired:
		done = p.closedLocked(e)
	default:
		uses := e.uses
		e.idle = time.AfterFunc(p.cfg.IdleTimeout, func() {
			p.mu.Lock()
			var done *pgxpool.Pool
			if p.byID[id] == e && e.uses == uses && e.inUse == 0 && !e.retired {
				done = p.retireLocked(id, e)
			}
			p.mu.Unlock()
			closePool(done)
		})
	}
	p.mu.Unlock()
	closePool(done)
}

// retireLocked takes e out of the cache. It returns e's pool, for the
// caller to close once it let go of the lock, when no call holds it;
// otherwise the last call to return closes it.
func (p *pools) retireLocked(id uuid.UUID, e *poolEntry) *pgxpool.Pool {
	if p.byID[id] == e {
		delete(p.byID, id)
	}
	e.retired = true
	if e.idle != nil {
		e.idle.Stop()
		e.idle = nil
	}
	if e.inUse == 0 {
		return p.closedLocked(e)
	}
	return nil
}

// closedLocked counts e's pool as closed and returns it to be closed.
func (p *pools) closedLocked(e *poolEntry) *pgxpool.Pool {
	p.open--
	return e.pool
}

// closePool closes pool, if any. No call holds a connection of it, so
// closing only ends its idle connections.
func closePool(pool *pgxpool.Pool) {
	if pool != nil {
		pool.Close()
	}
}

// drop closes the pool of database id, if any.
func (p *pools) drop(id uuid.UUID) {
	p.mu.Lock()
	var done *pgxpool.Pool
	if e := p.byID[id]; e != nil {
		done = p.retireLocked(id, e)
	}
	p.mu.Unlock()
	closePool(done)
}

// close closes every pool (those in use when their calls return) and
// refuses calls from then on.
func (p *pools) close() {
	p.mu.Lock()
	p.closed = true
	var done []*pgxpool.Pool
	for id, e := range p.byID {
		if pool := p.retireLocked(id, e); pool != nil {
			done = append(done, pool)
		}
	}
	p.mu.Unlock()
	for _, pool := range done {
		pool.Close()
	}
}

// count returns the number of pools not yet closed.
func (p *pools) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}
