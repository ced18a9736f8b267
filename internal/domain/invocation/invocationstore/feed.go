package invocationstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// Feed returns the organization's notices after p.After, oldest first, up
// to the horizon: events of transactions that may still have earlier
// neighbours in flight are held back, and held reports whether any were,
// so the caller asks again soon.
func (s *Store) Feed(ctx context.Context, db DB, p *invocation.FeedParams) (items []invocation.FeedItem, held bool, err error) {
	kinds := make([]string, 0, len(invocation.Notices))
	for _, n := range invocation.Notices {
		if len(p.Notices) == 0 || slices.Contains(p.Notices, n) {
			kinds = append(kinds, string(n))
		}
	}
	rows, err := s.q.FeedList(ctx, db, dbsqlc.FeedListParams{
		OrganizationID: p.Org, SessionID: nilIfEmpty(p.SessionID), Kinds: kinds, Max: cmp.Or(p.Limit, 100),
		AfterXid: strconv.FormatInt(p.After.XID, 10), AfterID: p.After.ID,
	})
	if err != nil {
		return nil, false, fmt.Errorf("reading event feed: %w", err)
	}
	items, held = feedItems(rows)
	return items, held, nil
}

// FeedCursor returns the position of one of the organization's events, to
// resume a feed after it. An unknown id is invocation.ErrEventNotFound.
func (s *Store) FeedCursor(ctx context.Context, db DB, org string, eventID int64) (invocation.Cursor, error) {
	xid, err := s.q.FeedCursor(ctx, db, dbsqlc.FeedCursorParams{ID: eventID, OrganizationID: org})
	if errors.Is(err, pgx.ErrNoRows) {
		return invocation.Cursor{}, fmt.Errorf("%w: %d", invocation.ErrEventNotFound, eventID)
	}
	if err != nil {
		return invocation.Cursor{}, fmt.Errorf("locating event: %w", err)
	}
	return invocation.Cursor{XID: xid, ID: eventID}, nil
}

// FeedNow returns the position of the present: a feed that starts here
// delivers what becomes visible from now on, and perhaps a few events of
// transactions that committed just before.
func (s *Store) FeedNow(ctx context.Context, db DB) (invocation.Cursor, error) {
	horizon, err := s.q.FeedHorizon(ctx, db)
	if err != nil {
		return invocation.Cursor{}, fmt.Errorf("reading the feed horizon: %w", err)
	}
	return invocation.Cursor{XID: horizon}, nil
}

// FeedAll returns the events that make a notice of the organizations in
// scope after after, oldest first, up to the horizon, for relays that keep
// their own cursor; next is where the relay's cursor goes once it has
// handled them. Events out of scope are passed over for good: next moves
// beyond them, up to the horizon when nothing is left to read, so a relay
// with nothing to relay reads nothing again.
func (s *Store) FeedAll(ctx context.Context, db DB, after invocation.Cursor, scope invocation.FeedScope, limit int32) (items []invocation.FeedItem, next invocation.Cursor, err error) {
	// The horizon is read first: every transaction below it has ended, so
	// its events are all visible to the read that follows.
	horizon, err := s.FeedNow(ctx, db)
	if err != nil {
		return nil, after, err
	}
	next = after
	if horizon.XID > after.XID {
		next = horizon
	}
	if !scope.All && len(scope.Orgs) == 0 {
		return nil, next, nil
	}
	limit = cmp.Or(limit, 100)
	rows, err := s.q.FeedListAll(ctx, db, dbsqlc.FeedListAllParams{
		AfterXid: strconv.FormatInt(after.XID, 10), AfterID: after.ID,
		AllOrganizations: scope.All, Organizations: scope.Orgs, Max: limit,
	})
	if err != nil {
		return nil, after, fmt.Errorf("reading event feed: %w", err)
	}
	rs := make([]dbsqlc.FeedListRow, len(rows))
	for i, r := range rows {
		rs[i] = dbsqlc.FeedListRow(r)
	}
	items, held := feedItems(rs)
	switch {
	case held || len(rows) == int(limit): // more to read after the last item
		if len(items) == 0 {
			return nil, after, nil
		}
		return items, items[len(items)-1].Cursor, nil
	case len(items) > 0 && items[len(items)-1].Cursor.After(next):
		next = items[len(items)-1].Cursor
	}
	return items, next, nil
}

// feedItems turns feed rows into items, up to the first event not settled
// yet (held is then true).
func feedItems(rows []dbsqlc.FeedListRow) (items []invocation.FeedItem, held bool) {
	for _, r := range rows {
		if !r.Settled {
			return items, true
		}
		items = append(items, invocation.FeedItem{
			Event: invocation.Event{
				ID: r.EventID, InvocationID: r.ActionInvocation.ID, Seq: r.Seq, Type: invocation.EventType(r.Type),
				From: invocation.Status(deref(r.FromStatus)), To: invocation.Status(r.ToStatus), Actor: deref(r.Actor), Reason: deref(r.Reason),
				CreatedAt: r.EventCreatedAt,
			},
			Notice:     invocation.Notice(r.Kind),
			Invocation: fromRow(r.ActionInvocation),
			Cursor:     invocation.Cursor{XID: r.Xid, ID: r.EventID},
		})
	}
	return items, false
}
